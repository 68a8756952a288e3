package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"sync"
)

// SnapshotSchemaVersion versions the shared encoding of a snapshot. Bump it
// whenever Application (or what it holds) changes meaning: a replica meeting
// a row of another version reads the cluster again instead of decoding it,
// so old and new replicas coexist during a rolling update.
const SnapshotSchemaVersion = 1

// snapshotRecord is what a shared snapshot row encodes: everything the
// list, the detail, detection and the history join read, and the
// classified failure. Gob encodes every exported field, including those
// the JSON responses hide (resources, conditions, ignore rules, sync
// sources, argocd-cm settings).
type snapshotRecord struct {
	Apps          []Application
	OnlyNamespace string
	Settings      ArgoCDSettings
	Failure       *snapshotFailure
}

// snapshotFailure is a failed read as replicas share it.
type snapshotFailure struct {
	Code    string
	Reason  Reason
	Message string
}

// EncodeSnapshot returns the shared encoding of s and its content hash
// (which covers the schema version too, so a new version is never taken
// for unchanged content).
func EncodeSnapshot(s *Snapshot) (encoding []byte, hash string, err error) {
	var buf bytes.Buffer
	hash, err = encodeSnapshotTo(&buf, s)
	return buf.Bytes(), hash, err
}

// encodeBuffers are the buffers cold reads encode their snapshot into:
// most reads find the content unchanged and drop the encoding at once.
var encodeBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledEncoding is the largest buffer given back to encodeBuffers (a
// cluster of a few thousand apps); larger ones are left to the GC.
const maxPooledEncoding = 8 << 20

// encodeSnapshotTo writes the shared encoding of s to buf (reset first)
// and returns its content hash.
func encodeSnapshotTo(buf *bytes.Buffer, s *Snapshot) (string, error) {
	rec := snapshotRecord{Apps: s.Apps(), OnlyNamespace: s.OnlyNamespace, Settings: s.Settings}
	if s.Err != nil {
		// Only the classified failure crosses replicas; the wrapped
		// client error (with addresses) stays in the reading replica's log.
		rec.Failure = &snapshotFailure{Code: ErrorCode(s.Err), Reason: ErrorReason(s.Err), Message: ErrorMessage(s.Err)}
		rec.Apps = nil
	}
	buf.Reset()
	if err := gob.NewEncoder(buf).Encode(&rec); err != nil {
		return "", fmt.Errorf("encode snapshot: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "v%d\x00", SnapshotSchemaVersion)
	h.Write(buf.Bytes())
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// decodeSnapshotRecord reads an encoding made by EncodeSnapshot of the
// current schema version into a read result and its failure.
func decodeSnapshotRecord(b []byte) (AppRead, error, error) {
	var rec snapshotRecord
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&rec); err != nil {
		return AppRead{}, nil, fmt.Errorf("decode snapshot: %w", err)
	}
	read := AppRead{Apps: rec.Apps, OnlyNamespace: rec.OnlyNamespace, Settings: rec.Settings}
	if rec.Failure != nil {
		f := rec.Failure
		return read, &Error{Code: f.Code, Reason: f.Reason, Message: f.Message}, nil
	}
	for i := range read.Apps {
		restoreEmpty(&read.Apps[i])
	}
	return read, nil, nil
}

// restoreEmpty gives back the empty (not nil) slices gob drops, where the
// responses show them: an empty list is [] in JSON, never null.
func restoreEmpty(a *Application) {
	if a.Sources == nil {
		a.Sources = []AppSource{}
	}
	if a.Problems == nil {
		a.Problems = []AppProblem{}
	}
	if a.History == nil {
		a.History = []AppHistoryEntry{}
	}
	for i := range a.History {
		if a.History[i].Revisions == nil {
			a.History[i].Revisions = []string{}
		}
	}
	if a.Resources == nil {
		a.Resources = []AppResource{}
	}
	if a.Conditions == nil {
		a.Conditions = []AppCondition{}
	}
}
