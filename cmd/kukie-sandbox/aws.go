package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
)

// allowedNamespaces is the stack's AllowedNamespaces parameter.
const allowedNamespaces = "sandbox-*"

// awsAccount is the sandbox customer's AWS account: the stack the
// customer's CloudFormation template made, its role, the topic the stack
// notifies, and two EKS clusters. A new account id each start, so the
// printed "connect" line works again on a database an earlier make run
// used.
type awsAccount struct {
	id, role, stack, topic string
	clusters               [2]string
	externalID             string
	serviceAccount         string // the Kukie service's AWS account the role trusts
	level                  awsfake.Level
}

func newAWSAccount() (*awsAccount, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1e11))
	if err != nil {
		return nil, err
	}
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	id := fmt.Sprintf("3%011d", n)
	return &awsAccount{
		id:       id,
		role:     "arn:aws:iam::" + id + ":role/kukie/kukie-access",
		stack:    "arn:aws:cloudformation:" + region + ":" + id + ":stack/kukie-access/" + hex.EncodeToString(suffix),
		topic:    "arn:aws:sns:" + region + ":" + id + ":kukie-stack-events",
		clusters: [2]string{"kukie-sandbox-1", "kukie-sandbox-2"},
	}, nil
}

// createStack reads the team's ExternalId and the service account from the
// server (GET /v1/aws/onboarding, as the customer's console would show
// them), then creates the stack (template v5, FULL, AllowedNamespaces set)
// and its role trusting that ExternalId, as the customer's CloudFormation
// would.
func (w *world) createStack(ctx context.Context) error {
	var onboarding struct {
		ExternalID       string `json:"external_id"`
		ServiceAccountID string `json:"service_account_id"`
	}
	if err := w.apiCall(ctx, "GET", "/v1/aws/onboarding", &onboarding); err != nil {
		return err
	}
	if onboarding.ExternalID == "" || onboarding.ServiceAccountID == "" {
		return fmt.Errorf("GET /v1/aws/onboarding gave no ExternalId or service account: is KUKIE_AWS_REGION set for the server?")
	}
	w.mu.Lock()
	w.acct.externalID = onboarding.ExternalID
	w.acct.serviceAccount = onboarding.ServiceAccountID
	w.mu.Unlock()
	w.setLevel(awsfake.LevelFull)
	return nil
}

// setLevel makes the stack's AccessLevel level, and its role what the
// template's branch for level grants, as a stack update does.
func (w *world) setLevel(level awsfake.Level) {
	w.mu.Lock()
	a := *w.acct
	w.acct.level = level
	w.mu.Unlock()
	w.aws.AddStack(awsfake.Stack{ARN: a.stack, Status: "UPDATE_COMPLETE", NotificationARNs: []string{a.topic},
		Outputs:    map[string]string{"KukieTemplateVersion": "5"},
		Parameters: map[string]string{"AccessLevel": string(level), "AllowedNamespaces": allowedNamespaces}})
	w.aws.AddRole(awsfake.Role{ARN: a.role, Level: level, AllowedNamespaces: []string{allowedNamespaces}, StackARN: a.stack,
		Trust: awsfake.Trust{Mode: awsfake.TrustPinned, ExternalID: a.externalID, Account: a.serviceAccount}})
}

// stackUpdate changes the stack's AccessLevel and delivers the stack's
// UPDATE_COMPLETE notification to the server's webhook as SNS would: signed,
// with a signing certificate the server fetches through the proxy. It
// returns the webhook's status and answer.
func (w *world) stackUpdate(ctx context.Context, level awsfake.Level) (int, string, error) {
	w.mu.Lock()
	ready := w.acct.externalID != ""
	w.mu.Unlock()
	if !ready {
		return 0, "", fmt.Errorf("the AWS world is not up yet: wait for make run's \"whole world is ready\" line")
	}
	w.setLevel(level)
	m := w.sns.Notification(w.acct.topic, sns.CloudFormationSubject,
		snstest.StackEventMessage(snstest.StackStatusEvent(w.acct.stack, "UPDATE_COMPLETE", time.Now())))
	res, err := snstest.Post(ctx, nil, w.api+"/webhooks/aws/sns", w.sns.Sign(m, sns.SignatureVersion2), nil)
	if err != nil {
		return 0, "", fmt.Errorf("deliver the stack notification: %w", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	return res.StatusCode, strings.TrimSpace(string(b)), nil
}

// callAPI makes a request to the server with a development token of the
// team's admin, decoding a 2xx JSON answer into out.
func callAPI(ctx context.Context, api, secret, team, method, path string, out any) error {
	if secret == "" {
		return fmt.Errorf("KUKIE_AUTH_HS256_SECRET is not set: the sandbox signs its admin token with it")
	}
	tok, err := authtest.HS256([]byte(secret), authtest.Claims{Sub: "kukie-sandbox", Team: team,
		Roles: []string{"admin"}, Exp: time.Now().Add(10 * time.Minute)})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, api+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return json.Unmarshal(b, out)
}
