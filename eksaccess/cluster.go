package eksaccess

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	"github.com/kukie/gitops-server/service"
)

// EKS access policy names Kukie associates, by level.
const (
	policyClusterAdmin = "AmazonEKSClusterAdminPolicy"
	policyEdit         = "AmazonEKSEditPolicy"
	accessEntryType    = "STANDARD"
)

// PolicyARN is the ARN of an EKS access policy in a partition.
func PolicyARN(partition, name string) string {
	return "arn:" + partition + ":eks::aws:cluster-access-policy/" + name
}

// kukiePolicies are the policies Kukie may have associated, admin first
// (removing it matters most).
func kukiePolicies(partition string) []string {
	return []string{PolicyARN(partition, policyClusterAdmin), PolicyARN(partition, policyEdit)}
}

// DescribeCluster reads an EKS cluster of the account in region (the CA
// decoded to PEM). A missing cluster is ENOTFOUND eks_cluster_not_found.
func (a *AWS) DescribeCluster(ctx context.Context, acct service.Account, externalID, region, name string) (service.EKSCluster, error) {
	client, err := a.eksClient(ctx, acct.RoleARN, externalID, region)
	if err != nil {
		return service.EKSCluster{}, err
	}
	out, err := client.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		var nf *ekstypes.ResourceNotFoundException
		if errors.As(err, &nf) {
			return service.EKSCluster{}, &service.Error{Code: service.ENOTFOUND, Reason: ReasonEKSClusterNotFound, Err: err,
				Message: fmt.Sprintf("No EKS cluster %q was found in %s of the account.", name, region)}
		}
		return service.EKSCluster{}, eksError(err)
	}
	c := out.Cluster
	if c == nil {
		return service.EKSCluster{}, service.Errorf(service.EINTERNAL, "DescribeCluster returned no cluster.")
	}
	desc := service.EKSCluster{ARN: aws.ToString(c.Arn), Status: string(c.Status), Endpoint: aws.ToString(c.Endpoint)}
	if c.AccessConfig != nil {
		desc.AuthenticationMode = string(c.AccessConfig.AuthenticationMode)
	}
	if c.CertificateAuthority != nil && c.CertificateAuthority.Data != nil {
		pem, err := base64.StdEncoding.DecodeString(aws.ToString(c.CertificateAuthority.Data))
		if err != nil {
			return service.EKSCluster{}, service.WrapError(service.EINTERNAL, "The cluster's CA is not base64.", err)
		}
		desc.CAData = pem
	}
	return desc, nil
}

// GrantAccess gives the role access at c.AccessLevel: an access entry
// (created, or an existing one reused when it is STANDARD, has no
// Kubernetes groups and no policy but the one Kukie associates — else
// access_entry_conflict), then the level's policy: ClusterAdmin for the
// cluster, or Edit in c.Namespaces (distinct, sorted; the caller has
// intersected them with AllowedNamespaces). created is true when Kukie
// created the entry, in this call or an earlier attempt (c.EntryCreated).
func (a *AWS) GrantAccess(ctx context.Context, acct service.Account, externalID string, c service.Cluster) (bool, error) {
	created := c.EntryCreated
	policy, scope, err := accessPolicy(acct.Partition, c)
	if err != nil {
		return created, err
	}
	client, err := a.eksClient(ctx, acct.RoleARN, externalID, c.Region)
	if err != nil {
		return created, err
	}
	_, err = client.CreateAccessEntry(ctx, &eks.CreateAccessEntryInput{
		ClusterName: aws.String(c.EKSName), PrincipalArn: aws.String(acct.RoleARN), Type: aws.String(accessEntryType)})
	var inUse *ekstypes.ResourceInUseException
	switch {
	case err == nil:
		created = true
	case errors.As(err, &inUse):
		if err := checkExistingEntry(ctx, client, c.EKSName, acct.RoleARN, policy); err != nil {
			return created, err
		}
	default:
		return created, eksError(err)
	}
	_, err = client.AssociateAccessPolicy(ctx, &eks.AssociateAccessPolicyInput{
		ClusterName: aws.String(c.EKSName), PrincipalArn: aws.String(acct.RoleARN),
		PolicyArn: aws.String(policy), AccessScope: scope})
	if err != nil {
		return created, eksError(err)
	}
	return created, nil
}

// accessPolicy is the policy and scope of c's level.
func accessPolicy(partition string, c service.Cluster) (string, *ekstypes.AccessScope, error) {
	switch c.AccessLevel {
	case service.AccessFull:
		return PolicyARN(partition, policyClusterAdmin), &ekstypes.AccessScope{Type: ekstypes.AccessScopeTypeCluster}, nil
	case service.AccessLimited:
		ns := slices.Clone(c.Namespaces)
		slices.Sort(ns)
		ns = slices.Compact(ns)
		if len(ns) == 0 || ns[0] == "" {
			return "", nil, service.Errorf(service.EINVALID, "Limited access needs at least one namespace.")
		}
		return PolicyARN(partition, policyEdit), &ekstypes.AccessScope{Type: ekstypes.AccessScopeTypeNamespace, Namespaces: ns}, nil
	}
	return "", nil, service.Errorf(service.EINVALID, "Access level %q is neither full nor limited.", c.AccessLevel)
}

// checkExistingEntry accepts the principal's existing entry only when
// reusing it gives exactly the access Kukie means to give.
func checkExistingEntry(ctx context.Context, client *eks.Client, cluster, principal, policy string) error {
	out, err := client.DescribeAccessEntry(ctx, &eks.DescribeAccessEntryInput{
		ClusterName: aws.String(cluster), PrincipalArn: aws.String(principal)})
	if err != nil {
		return eksError(err)
	}
	var found []string
	if e := out.AccessEntry; e != nil {
		if t := aws.ToString(e.Type); t != accessEntryType {
			found = append(found, "type "+t)
		}
		if len(e.KubernetesGroups) > 0 {
			found = append(found, "Kubernetes groups "+strings.Join(e.KubernetesGroups, ", "))
		}
	}
	policies, err := associatedPolicies(ctx, client, cluster, principal)
	if err != nil {
		return eksError(err)
	}
	for _, p := range policies {
		if p != policy {
			found = append(found, "access policy "+p)
		}
	}
	if len(found) > 0 {
		return service.ReasonError(service.ECONFLICT, reasonAccessEntryConflict,
			"The role already has an access entry on this cluster that Kukie would not create ("+strings.Join(found, "; ")+
				"): it could give more or other rights than the account's level. Remove it, or those parts, and register again.")
	}
	return nil
}

// associatedPolicies lists the policy ARNs associated with an entry.
func associatedPolicies(ctx context.Context, client *eks.Client, cluster, principal string) ([]string, error) {
	var out []string
	pages := eks.NewListAssociatedAccessPoliciesPaginator(client, &eks.ListAssociatedAccessPoliciesInput{
		ClusterName: aws.String(cluster), PrincipalArn: aws.String(principal)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, p := range page.AssociatedAccessPolicies {
			out = append(out, aws.ToString(p.PolicyArn))
		}
	}
	return out, nil
}

// RevokeAccess removes Kukie's policies (ClusterAdmin first, then Edit)
// from the role's entry and deletes the entry when Kukie created it. What
// is already gone counts as removed.
func (a *AWS) RevokeAccess(ctx context.Context, acct service.Account, externalID string, c service.Cluster) error {
	client, err := a.eksClient(ctx, acct.RoleARN, externalID, c.Region)
	if err != nil {
		return err
	}
	policies, err := associatedPolicies(ctx, client, c.EKSName, acct.RoleARN)
	if err != nil {
		if notFound(err) {
			return nil // the entry or the cluster is gone
		}
		return eksError(err)
	}
	for _, p := range kukiePolicies(acct.Partition) {
		if !slices.Contains(policies, p) {
			continue
		}
		_, err := client.DisassociateAccessPolicy(ctx, &eks.DisassociateAccessPolicyInput{
			ClusterName: aws.String(c.EKSName), PrincipalArn: aws.String(acct.RoleARN), PolicyArn: aws.String(p)})
		if err != nil && !notFound(err) {
			return eksError(err)
		}
	}
	if !c.EntryCreated {
		return nil
	}
	_, err = client.DeleteAccessEntry(ctx, &eks.DeleteAccessEntryInput{
		ClusterName: aws.String(c.EKSName), PrincipalArn: aws.String(acct.RoleARN)})
	if err != nil && !notFound(err) {
		return eksError(err)
	}
	return nil
}

func notFound(err error) bool {
	var nf *ekstypes.ResourceNotFoundException
	return errors.As(err, &nf)
}
