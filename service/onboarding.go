package service

import (
	"slices"
	"strings"
)

// The customer CloudFormation template (deploy/cloudformation/kukie-access.yaml):
// its version, parameter and output names, and AccessLevel values. The
// template's test checks them against the file.
const (
	// CurrentTemplateVersion is the KukieTemplateVersion output of the
	// template this server ships.
	CurrentTemplateVersion = "5"
	// LegacyTemplateVersion is a stack without the KukieTemplateVersion
	// output: treated as limited to DefaultAllowedNamespaces until the
	// customer updates it and chooses a level.
	LegacyTemplateVersion = "4"

	TemplateParamServiceAccountID  = "KukieServiceAccountId"
	TemplateParamExternalID        = "ExternalId"
	TemplateParamAccessLevel       = "AccessLevel"
	TemplateParamAllowedNamespaces = "AllowedNamespaces"
	TemplateOutputRoleARN          = "RoleArn"
	TemplateOutputVersion          = "KukieTemplateVersion"

	TemplateLevelFull    = "FULL"
	TemplateLevelLimited = "LIMITED"

	// DefaultAllowedNamespaces is AllowedNamespaces' default, and what a v4
	// stack is taken to allow.
	DefaultAllowedNamespaces = "kukie-*"
)

// Onboarding is what a team needs to create the access stack in its AWS
// account: the values to enter, what each parameter means, and what the role
// can do at each level, described across the whole account rather than by
// what Kukie chooses to do with it. It holds nothing secret.
type Onboarding struct {
	ExternalID string `json:"external_id"`
	// ServiceAccountID is the Kukie service's AWS account the role trusts;
	// empty when the server has no AWS configuration.
	ServiceAccountID string `json:"service_account_id"`
	TemplateVersion  string `json:"template_version"`
	// TemplateURL is where the template can be downloaded; the caller sets it
	// when the server knows one.
	TemplateURL   string                `json:"template_url,omitempty"`
	Capabilities  []string              `json:"capabilities"`
	Parameters    []OnboardingParameter `json:"parameters"`
	Outputs       []OnboardingOutput    `json:"outputs"`
	Levels        []OnboardingLevel     `json:"levels"`
	DeployCommand string                `json:"deploy_command"`
	UpgradeNote   string                `json:"upgrade_note"`
	UpgradeNoteKO string                `json:"upgrade_note_ko"`
}

// OnboardingParameter is one template parameter. Value is what to enter when
// Kukie decides it (ExternalId, the service account); Required means there
// is no default to fall back on.
type OnboardingParameter struct {
	Name          string   `json:"name"`
	Value         string   `json:"value,omitempty"`
	Default       string   `json:"default,omitempty"`
	AllowedValues []string `json:"allowed_values,omitempty"`
	Required      bool     `json:"required"`
	Description   string   `json:"description"`
	DescriptionKO string   `json:"description_ko"`
}

// OnboardingOutput is a stack output the customer copies back to Kukie.
type OnboardingOutput struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	DescriptionKO string `json:"description_ko"`
}

// OnboardingLevel describes one AccessLevel by what the role can do in the
// whole account.
type OnboardingLevel struct {
	Level          AccessLevel `json:"level"`
	ParameterValue string      `json:"parameter_value"`
	AccessPolicy   string      `json:"access_policy"`
	AccessScope    string      `json:"access_scope"`
	Summary        string      `json:"summary"`
	SummaryKO      string      `json:"summary_ko"`
	CanDo          []string    `json:"can_do"`
	CanDoKO        []string    `json:"can_do_ko"`
	CannotDo       []string    `json:"cannot_do"`
	CannotDoKO     []string    `json:"cannot_do_ko"`
}

// NewOnboarding returns the onboarding answer for team. serviceAccountID is
// the Kukie service's AWS account, "" when AWS is not configured.
func NewOnboarding(team Team, serviceAccountID string) Onboarding {
	return Onboarding{
		ExternalID:       team.ExternalID,
		ServiceAccountID: serviceAccountID,
		TemplateVersion:  CurrentTemplateVersion,
		Capabilities:     []string{"CAPABILITY_IAM"},
		Parameters:       onboardingParameters(team.ExternalID, serviceAccountID),
		Outputs: []OnboardingOutput{
			{
				Name:          TemplateOutputRoleARN,
				Description:   "The role Kukie assumes. Enter it together with the stack's ARN when you connect the account.",
				DescriptionKO: "Kukie가 맡는 역할입니다. 계정을 연결할 때 스택 ARN과 함께 입력하세요.",
			},
			{
				Name:          TemplateOutputVersion,
				Description:   "The template version (" + CurrentTemplateVersion + "). Kukie reads it from the stack; stacks without it are template v" + LegacyTemplateVersion + ".",
				DescriptionKO: "템플릿 버전(" + CurrentTemplateVersion + ")입니다. Kukie가 스택에서 읽으며, 이 출력이 없는 스택은 템플릿 v" + LegacyTemplateVersion + "입니다.",
			},
		},
		Levels:        onboardingLevels(),
		DeployCommand: deployCommand(team.ExternalID, serviceAccountID),
		UpgradeNote: "Stacks created from template v" + LegacyTemplateVersion + " have no " + TemplateOutputVersion +
			" output. Kukie treats them as LIMITED with namespaces " + DefaultAllowedNamespaces +
			" until you update the stack to this template and choose AccessLevel yourself; Kukie never widens a v" +
			LegacyTemplateVersion + " stack to FULL on its own.",
		UpgradeNoteKO: "템플릿 v" + LegacyTemplateVersion + "로 만든 스택에는 " + TemplateOutputVersion +
			" 출력이 없습니다. 이 템플릿으로 스택을 업데이트하고 AccessLevel을 직접 고르기 전까지 Kukie는 네임스페이스 " +
			DefaultAllowedNamespaces + " 에 대한 LIMITED로 다룹니다. Kukie가 v" + LegacyTemplateVersion +
			" 스택을 스스로 FULL로 넓히는 일은 없습니다.",
	}
}

func onboardingParameters(externalID, serviceAccountID string) []OnboardingParameter {
	return []OnboardingParameter{
		{
			Name:          TemplateParamServiceAccountID,
			Value:         serviceAccountID,
			Required:      true,
			Description:   "The Kukie service's AWS account ID. The role trusts only this account.",
			DescriptionKO: "Kukie 서비스의 AWS 계정 ID입니다. 역할은 이 계정만 신뢰합니다.",
		},
		{
			Name:     TemplateParamExternalID,
			Value:    externalID,
			Required: true,
			Description: "Your team's ExternalId. Kukie generates it; it is unique to your team, never changes and is not a secret. " +
				"Enter it exactly: the role can be assumed only with it.",
			DescriptionKO: "팀의 ExternalId입니다. Kukie가 만들며 팀마다 다르고 바뀌지 않습니다. 비밀 값은 아닙니다. " +
				"그대로 입력하세요. 이 값이 있어야만 역할을 맡을 수 있습니다.",
		},
		{
			Name:          TemplateParamAccessLevel,
			AllowedValues: []string{TemplateLevelFull, TemplateLevelLimited},
			Required:      true,
			Description:   "FULL or LIMITED. There is no default: choose one explicitly. See levels for what the role can do at each.",
			DescriptionKO: "FULL 또는 LIMITED입니다. 기본값이 없으니 직접 고르세요. 수준별로 역할이 할 수 있는 일은 levels에 있습니다.",
		},
		{
			Name:    TemplateParamAllowedNamespaces,
			Default: DefaultAllowedNamespaces,
			Description: "Used at LIMITED: comma-separated namespaces, no spaces, * as a wildcard. " +
				"Every namespace you register a cluster with must match one of them; kube-* namespaces are never allowed. Ignored at FULL.",
			DescriptionKO: "LIMITED에서 쓰입니다. 쉼표로 구분한 네임스페이스 목록이며 공백 없이 쓰고 *는 와일드카드입니다. " +
				"클러스터를 등록할 때 고르는 네임스페이스는 모두 이 중 하나와 맞아야 하며, kube-* 네임스페이스는 허용되지 않습니다. FULL에서는 쓰이지 않습니다.",
		},
	}
}

func onboardingLevels() []OnboardingLevel {
	// What the role can and cannot do at either level.
	canEither := []string{
		"Read the endpoint, certificate and authentication mode of any EKS cluster in this account, in every region.",
		"Create, read and delete access entries for itself only (type STANDARD, no Kubernetes groups, no custom user name), " +
			"and remove the ClusterAdmin or Edit policy from them.",
		"Read this CloudFormation stack (parameters and outputs) and no other.",
	}
	canEitherKO := []string{
		"이 계정의 모든 리전에 있는 어떤 EKS 클러스터든 엔드포인트, 인증서, 인증 모드를 읽을 수 있습니다.",
		"자기 자신의 액세스 항목만 만들고 읽고 지울 수 있으며(STANDARD 유형, Kubernetes 그룹과 사용자 이름 지정 없음), " +
			"거기서 ClusterAdmin 또는 Edit 정책을 뗄 수 있습니다.",
		"이 CloudFormation 스택(파라미터와 출력)만 읽을 수 있고 다른 스택은 읽을 수 없습니다.",
	}
	cannotEither := []string{
		"Give access to any other IAM user or role, or change their access entries.",
		"Create, change or delete clusters, node groups or add-ons, or call anything outside EKS access entries and this stack.",
	}
	cannotEitherKO := []string{
		"다른 IAM 사용자나 역할에 권한을 주거나 그들의 액세스 항목을 바꿀 수 없습니다.",
		"클러스터, 노드 그룹, 애드온을 만들거나 바꾸거나 지울 수 없고, EKS 액세스 항목과 이 스택 밖의 어떤 API도 호출할 수 없습니다.",
	}

	return []OnboardingLevel{
		{
			Level:          AccessFull,
			ParameterValue: TemplateLevelFull,
			AccessPolicy:   "AmazonEKSClusterAdminPolicy",
			AccessScope:    "cluster",
			Summary:        "The role can make itself cluster admin on any EKS cluster in this account; Kukie attaches it only to clusters you register.",
			SummaryKO:      "이 역할은 이 계정의 어떤 EKS 클러스터에서든 자신을 클러스터 관리자로 만들 수 있습니다. Kukie는 등록한 클러스터에만 이 권한을 붙입니다.",
			CanDo: slices.Concat([]string{
				"Associate AmazonEKSClusterAdminPolicy (cluster scope) with its own access entry on any EKS cluster in this account: " +
					"full control of everything in that cluster, including Secrets, RBAC and workloads in every namespace.",
			}, canEither, []string{
				"Argo CD views (app list, app detail) and GPU views are available.",
			}),
			CanDoKO: slices.Concat([]string{
				"이 계정의 어떤 EKS 클러스터에서든 자신의 액세스 항목에 AmazonEKSClusterAdminPolicy(클러스터 범위)를 연결할 수 있습니다. " +
					"그 클러스터의 모든 네임스페이스에서 Secret, RBAC, 워크로드를 포함한 모든 것을 제어하게 됩니다.",
			}, canEitherKO, []string{
				"Argo CD 화면(앱 목록, 앱 상세)과 GPU 화면을 쓸 수 있습니다.",
			}),
			CannotDo:   slices.Clone(cannotEither),
			CannotDoKO: slices.Clone(cannotEitherKO),
		},
		{
			Level:          AccessLimited,
			ParameterValue: TemplateLevelLimited,
			AccessPolicy:   "AmazonEKSEditPolicy",
			AccessScope:    "namespace",
			Summary:        "The role can give itself edit rights in the allowed namespaces of any EKS cluster in this account; Argo CD and GPU views are unavailable.",
			SummaryKO:      "이 역할은 이 계정의 어떤 EKS 클러스터에서든 허용된 네임스페이스 안에서 자신에게 편집 권한을 줄 수 있습니다. Argo CD 화면과 GPU 화면은 쓸 수 없습니다.",
			CanDo: slices.Concat([]string{
				"Associate AmazonEKSEditPolicy (namespace scope) with its own access entry on any EKS cluster in this account, " +
					"only for namespaces matching AllowedNamespaces and never kube-* ones: read and change workloads, Services, ConfigMaps and Secrets there.",
				"Remove the ClusterAdmin policy from its own access entries, so that a switch from FULL takes admin rights away.",
			}, canEither),
			CanDoKO: slices.Concat([]string{
				"이 계정의 어떤 EKS 클러스터에서든 AllowedNamespaces와 맞는 네임스페이스에 한해 자신의 액세스 항목에 " +
					"AmazonEKSEditPolicy(네임스페이스 범위)를 연결할 수 있습니다(kube-* 네임스페이스는 제외). 그 안의 워크로드, Service, ConfigMap, Secret을 읽고 바꿀 수 있습니다.",
				"FULL에서 바꿀 때 관리자 권한을 뗄 수 있도록, 자신의 액세스 항목에서 ClusterAdmin 정책을 제거할 수 있습니다.",
			}, canEitherKO),
			CannotDo: slices.Concat([]string{
				"Attach ClusterAdmin or any policy other than Edit, or Edit at cluster scope, outside AllowedNamespaces or in kube-* namespaces (kube-system).",
				"Argo CD views and GPU views are unavailable: they read outside the allowed namespaces (Argo CD's namespace, the cluster's nodes).",
			}, cannotEither),
			CannotDoKO: slices.Concat([]string{
				"ClusterAdmin이나 Edit 외의 정책을 붙일 수 없고, Edit도 클러스터 범위, AllowedNamespaces 밖, kube-* 네임스페이스(kube-system)에는 붙일 수 없습니다.",
				"Argo CD 화면과 GPU 화면은 쓸 수 없습니다. 허용된 네임스페이스 밖(Argo CD 네임스페이스, 클러스터의 노드)을 읽어야 하기 때문입니다.",
			}, cannotEitherKO),
		},
	}
}

// deployCommand is the AWS CLI command that creates or updates the stack.
// AccessLevel is left as a placeholder CloudFormation rejects, so the
// customer has to choose; a missing service account is a placeholder too.
func deployCommand(externalID, serviceAccountID string) string {
	if serviceAccountID == "" {
		serviceAccountID = "KUKIE_SERVICE_ACCOUNT_ID"
	}
	return "aws cloudformation deploy --stack-name kukie-access --template-file kukie-access.yaml" +
		" --capabilities CAPABILITY_IAM --parameter-overrides " +
		shellQuote(TemplateParamServiceAccountID+"="+serviceAccountID) + " " +
		shellQuote(TemplateParamExternalID+"="+externalID) + " " +
		TemplateParamAccessLevel + "=FULL_OR_LIMITED " +
		shellQuote(TemplateParamAllowedNamespaces+"="+DefaultAllowedNamespaces)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
