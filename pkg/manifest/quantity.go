package manifest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// quantityLists are the keys whose values map resource names to
// quantities in the kinds karp reads.
var quantityLists = map[string]bool{
	"requests": true, "limits": true, "overhead": true, "capacity": true, "allocatable": true,
	"default": true, "defaultRequest": true, "max": true, "min": true, "maxLimitRequestRatio": true,
}

// badQuantityPath finds the field holding an unparsable quantity, as
// "spec.containers[0].resources.requests.cpu: Invalid value: \"lots\"",
// because the JSON decoder reports the parse error without its path.
func badQuantityPath(data []byte) string {
	var obj interface{}
	if err := json.Unmarshal(data, &obj); err != nil {
		return ""
	}
	return walkQuantities(obj, "", false)
}

func walkQuantities(x interface{}, path string, inList bool) string {
	switch v := x.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := k
			if path != "" {
				child = path + "." + k
			}
			if inList {
				if msg := checkQuantity(v[k], child); msg != "" {
					return msg
				}
				continue
			}
			if msg := walkQuantities(v[k], child, quantityLists[k] || k == "sizeLimit" && isScalar(v[k])); msg != "" {
				return msg
			}
		}
	case []interface{}:
		for i, item := range v {
			if msg := walkQuantities(item, fmt.Sprintf("%s[%d]", path, i), false); msg != "" {
				return msg
			}
		}
	default:
		if inList {
			return checkQuantity(v, path)
		}
	}
	return ""
}

func isScalar(x interface{}) bool {
	switch x.(type) {
	case map[string]interface{}, []interface{}:
		return false
	}
	return true
}

func checkQuantity(x interface{}, path string) string {
	s, ok := x.(string)
	if !ok {
		return ""
	}
	if _, err := resource.ParseQuantity(strings.TrimSpace(s)); err != nil {
		return fmt.Sprintf("%s: Invalid value: %q", path, s)
	}
	return ""
}
