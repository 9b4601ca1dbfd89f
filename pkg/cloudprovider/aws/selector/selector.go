// Package selector turns the tag maps of EC2NodeClass selector terms into
// EC2 Describe* filters, the same way for subnets, security groups, AMIs and
// capacity reservations: a tag whose value is "*" becomes a tag-key filter
// (the tag must exist, any value), any other becomes tag:<key>=<value>.
// Filters are ANDed by EC2, so a term's tags must all match.
//
// It is pure: it builds request values and combines answers; the callers
// make the calls (Resolve runs the List functions it is given).
package selector

import (
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TagFilters returns one filter per tag, sorted by key so a term always
// yields the same request.
func TagFilters(tags map[string]string) []ec2types.Filter {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]ec2types.Filter, 0, len(keys))
	for _, k := range keys {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// Match reports whether value matches an EC2 filter value, in which *
// matches any run of characters (including none) and ? exactly one, so a
// term's value can be checked against what EC2 returned for it.
func Match(pattern, value string) bool {
	p, v := []rune(pattern), []rune(value)
	star, resume := -1, 0
	i, j := 0, 0
	for j < len(v) {
		switch {
		case i < len(p) && (p[i] == '?' || p[i] == v[j]):
			i++
			j++
		case i < len(p) && p[i] == '*':
			star, resume = i, j
			i++
		case star >= 0:
			resume++
			i, j = star+1, resume
		default:
			return false
		}
	}
	for i < len(p) && p[i] == '*' {
		i++
	}
	return i == len(p)
}
