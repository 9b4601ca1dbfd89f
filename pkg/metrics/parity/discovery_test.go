package parity_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// discoveryServer answers only the API discovery requests the manager's
// REST mapper makes while controllers register, from scheme's kinds; any
// other request fails. Nothing in this test starts, so nothing else is
// asked.
func discoveryServer(t *testing.T, scheme *runtime.Scheme) *httptest.Server {
	t.Helper()
	resources := map[string][]metav1.APIResource{} // group/version -> resources
	for gvk := range scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		gv := gvk.GroupVersion().String()
		resources[gv] = append(resources[gv], metav1.APIResource{Name: strings.ToLower(gvk.Kind) + "s",
			Kind: gvk.Kind, Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch"}})
	}
	groups := map[string]*metav1.APIGroup{}
	for gv := range resources {
		group, version, ok := strings.Cut(gv, "/")
		if !ok {
			continue
		}
		g := groups[group]
		if g == nil {
			g = &metav1.APIGroup{Name: group}
			groups[group] = g
		}
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: version})
		g.PreferredVersion = g.Versions[0]
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body any
		switch p := r.URL.Path; {
		case p == "/api":
			body = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}}
		case p == "/apis":
			list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
			for _, g := range groups {
				list.Groups = append(list.Groups, *g)
			}
			body = list
		case p == "/api/v1" || strings.HasPrefix(p, "/apis/"):
			gv := strings.TrimPrefix(strings.TrimPrefix(p, "/apis/"), "/api/")
			body = &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: gv, APIResources: resources[gv]}
		default:
			http.Error(w, "not served", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}
