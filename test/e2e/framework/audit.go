package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// AuditEnv, set (to any value) before the package's TestMain starts the
// cluster, makes the API server log every request to logs/audit.log in
// the cluster directory (see localcluster's apiServerArgs).
const AuditEnv = "KARP_APISERVER_AUDIT"

// AuditEvent is the part of an API server audit event the tests read.
type AuditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// Write reports whether the request could change state.
func (e AuditEvent) Write() bool {
	return slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, e.Verb)
}

func (e AuditEvent) String() string {
	ref := ""
	if e.ObjectRef != nil {
		ref = e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			ref += "/" + e.ObjectRef.Subresource
		}
		ref += " " + e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
	}
	code := 0
	if e.ResponseStatus != nil {
		code = e.ResponseStatus.Code
	}
	return fmt.Sprintf("%s %s %s by %s (%d) at %s", e.Verb, ref, e.UserAgent, e.User.Username, code, e.RequestReceived.Format(time.RFC3339Nano))
}

// AuditEvents reads the API server's audit log; the package's TestMain
// must have set AuditEnv before starting the cluster.
func AuditEvents(t testing.TB, f *Framework) []AuditEvent {
	t.Helper()
	path := filepath.Join(f.Cluster.Dir, "logs", "audit.log")
	file, err := os.Open(path)
	if err != nil {
		t.Fatalf("reading the audit log (is %s set before the cluster starts?): %v", AuditEnv, err)
	}
	defer file.Close()
	var events []AuditEvent
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("decoding %s: %v", path, err)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return events
}
