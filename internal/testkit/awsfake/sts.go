package awsfake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"
)

const stsVersion = "2011-06-15"

var (
	sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]*$`)
	externalIDPattern  = regexp.MustCompile(`^[\w+=,./@:-]*$`)
)

type assumeRoleResult struct {
	XMLName         xml.Name        `xml:"AssumeRoleResult"`
	AssumedRoleUser assumedRoleUser `xml:"AssumedRoleUser"`
	Credentials     stsCredentials  `xml:"Credentials"`
}

type assumedRoleUser struct {
	AssumedRoleID string `xml:"AssumedRoleId"`
	Arn           string `xml:"Arn"`
}

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type getCallerIdentityResult struct {
	XMLName xml.Name `xml:"GetCallerIdentityResult"`
	Arn     string   `xml:"Arn"`
	UserID  string   `xml:"UserId"`
	Account string   `xml:"Account"`
}

// serveSTS answers AssumeRole (signed POST) and GetCallerIdentity (signed
// POST or GET, or a presigned GET as an EKS token's URL is).
func (a *AWS) serveSTS(w http.ResponseWriter, r *http.Request) {
	params, body, err := readQuery(r)
	if err != nil {
		writeQueryError(w, xmlnsSTS, http.StatusBadRequest, "MalformedQueryString", err.Error())
		return
	}
	op := params.Get("Action")
	if (op != OpAssumeRole && op != OpGetCallerIdentity) || params.Get("Version") != stsVersion {
		writeQueryError(w, xmlnsSTS, http.StatusBadRequest, "InvalidAction",
			fmt.Sprintf("Could not find operation %s for version %s", op, params.Get("Version")))
		return
	}
	if !a.wait(r.Context(), op) {
		return // the client gave up
	}

	var c *credential
	var region string
	var fail *authFailure
	if r.Method == http.MethodGet && params.Has("X-Amz-Signature") {
		u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
		c, region, fail = a.verifyPresigned(u, r.Header, "sts")
	} else {
		c, region, fail = a.verifyHeaderSigned(r, body, "sts")
	}
	if fail != nil {
		a.record(op, "", region)
		queryAuthError(w, xmlnsSTS, fail)
		return
	}

	switch op {
	case OpAssumeRole:
		a.assumeRole(w, c, region, params)
	case OpGetCallerIdentity:
		if f := a.record(op, c.principalARN, region); f != nil {
			writeQueryError(w, xmlnsSTS, f.Status, f.Code, f.Message)
			return
		}
		writeQueryResult(w, xmlnsSTS, op, getCallerIdentityResult{Arn: c.callerARN(), UserID: c.userID, Account: c.account})
	}
}

func validationError(w http.ResponseWriter, xmlns, msg string) {
	writeQueryError(w, xmlns, http.StatusBadRequest, "ValidationError", msg)
}

func (a *AWS) assumeRole(w http.ResponseWriter, caller *credential, region string, p url.Values) {
	roleARN := p.Get("RoleArn")
	if f := a.record(OpAssumeRole, roleARN, region); f != nil {
		writeQueryError(w, xmlnsSTS, f.Status, f.Code, f.Message)
		return
	}
	session := p.Get("RoleSessionName")
	externalID, hasExternalID := p.Get("ExternalId"), p.Has("ExternalId")
	switch {
	case len(roleARN) < 20 || len(roleARN) > 2048:
		validationError(w, xmlnsSTS, fmt.Sprintf("1 validation error detected: Value '%s' at 'roleArn' failed to satisfy constraint: Member must have length greater than or equal to 20", roleARN))
		return
	case len(session) < 2 || len(session) > 64 || !sessionNamePattern.MatchString(session):
		validationError(w, xmlnsSTS, fmt.Sprintf("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]* and have length between 2 and 64", session))
		return
	case hasExternalID && (len(externalID) < 2 || len(externalID) > 1224 || !externalIDPattern.MatchString(externalID)):
		validationError(w, xmlnsSTS, fmt.Sprintf("1 validation error detected: Value '%s' at 'externalId' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@:\\/-]* and have length between 2 and 1224", externalID))
		return
	}
	duration := time.Hour
	if s := p.Get("DurationSeconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 900 || n > 43200 {
			validationError(w, xmlnsSTS, fmt.Sprintf("1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value between 900 and 43200", s))
			return
		}
		duration = time.Duration(n) * time.Second
	}

	a.mu.Lock()
	role, ok := a.roles[roleARN]
	parsed, _ := parseRoleARN(roleARN)
	if !ok || !trustAllows(role.Trust, a.account, caller.account, externalID, hasExternalID) {
		a.mu.Unlock()
		writeQueryError(w, xmlnsSTS, http.StatusForbidden, "AccessDenied",
			fmt.Sprintf("User: %s is not authorized to perform: sts:AssumeRole on resource: %s", caller.callerARN(), roleARN))
		return
	}
	if duration > role.MaxSessionDuration {
		a.mu.Unlock()
		validationError(w, xmlnsSTS, "The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
		return
	}
	if caller.sessionARN != "" && duration > time.Hour {
		a.mu.Unlock()
		validationError(w, xmlnsSTS, "The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.")
		return
	}
	if a.sessionDuration > 0 {
		duration = a.sessionDuration
	}
	c := &credential{
		accessKeyID:  "ASIA" + randomID(16),
		secret:       randomSecret(),
		sessionToken: "FwoGZXIvYXdzE" + randomSecret() + randomSecret() + randomSecret(),
		expires:      a.now().Add(duration).Truncate(time.Second),
		account:      parsed.account,
		principalARN: roleARN,
		sessionARN:   fmt.Sprintf("arn:%s:sts::%s:assumed-role/%s/%s", parsed.partition, parsed.account, parsed.name, session),
		userID:       role.id + ":" + session,
	}
	a.creds[c.accessKeyID] = c
	a.mu.Unlock()

	writeQueryResult(w, xmlnsSTS, OpAssumeRole, assumeRoleResult{
		AssumedRoleUser: assumedRoleUser{AssumedRoleID: c.userID, Arn: c.sessionARN},
		Credentials: stsCredentials{AccessKeyID: c.accessKeyID, SecretAccessKey: c.secret, SessionToken: c.sessionToken,
			Expiration: c.expires.UTC().Format(time.RFC3339)},
	})
}
