package fake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
)

// AccountID is the AWS account the fakes act as: the owner of the images,
// subnets and security groups they hold unless a test says otherwise, and
// what the Owners value "self" stands for in DescribeImages.
const AccountID = "123456789012"

// APIError returns an error shaped as the AWS SDK returns a service error:
// a smithy.APIError whose ErrorCode is code, so callers classify it exactly
// as they would a real one.
func APIError(code, message string) error {
	return &smithy.GenericAPIError{Code: code, Message: message, Fault: smithy.FaultClient}
}

// Tags converts a map into EC2 tags, sorted by key so outputs are stable.
func Tags(tags map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, ec2types.Tag{Key: ptr(k), Value: ptr(tags[k])})
	}
	return out
}

// filterFields resolves an EC2 filter name to the values the object has for
// it; ok is false when the API does not support that filter name.
type filterFields func(name string) (values []string, ok bool)

// matchFilters applies EC2 filter semantics: every filter must match (AND),
// a filter matches when any of its values matches any of the object's
// values for that name (OR), and values may hold the wildcards * and ?.
// An unsupported filter name is an InvalidParameterValue error, as EC2
// answers.
func matchFilters(filters []ec2types.Filter, fields filterFields) (bool, error) {
	for _, f := range filters {
		name := deref(f.Name)
		have, ok := fields(name)
		if !ok {
			return false, APIError("InvalidParameterValue", fmt.Sprintf("The filter '%s' is invalid", name))
		}
		if !anyMatch(f.Values, have) {
			return false, nil
		}
	}
	return true, nil
}

// tagFields answers the tag filters every taggable EC2 resource supports:
// tag:<key> (the tag's value) and tag-key (every key).
func tagFields(tags []ec2types.Tag, name string) ([]string, bool) {
	if key, ok := strings.CutPrefix(name, "tag:"); ok {
		for _, t := range tags {
			if deref(t.Key) == key {
				return []string{deref(t.Value)}, true
			}
		}
		return nil, true
	}
	if name == "tag-key" {
		keys := make([]string, 0, len(tags))
		for _, t := range tags {
			keys = append(keys, deref(t.Key))
		}
		return keys, true
	}
	return nil, false
}

// anyMatch reports whether any pattern matches any value under EC2's
// filter wildcards, the rule selector.Match states for karp too.
func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if selector.Match(p, v) {
				return true
			}
		}
	}
	return false
}

// page returns one page of items as EC2 paginates: at most maxResults items
// (all when unset) starting at the offset encoded in nextToken, and the
// token of the next page when items remain. maxResults outside [lo, hi] and
// a token this fake did not hand out are errors, as EC2 answers.
func page[T any](items []T, maxResults *int32, nextToken *string, lo, hi int32) ([]T, *string, error) {
	start := 0
	if nextToken != nil {
		n, err := strconv.Atoi(strings.TrimPrefix(*nextToken, "page-"))
		if err != nil || !strings.HasPrefix(*nextToken, "page-") || n < 0 || n > len(items) {
			return nil, nil, APIError("InvalidPaginationToken", fmt.Sprintf("Invalid pagination token %q", *nextToken))
		}
		start = n
	}
	if maxResults == nil {
		return items[start:], nil, nil
	}
	if *maxResults < lo || *maxResults > hi {
		return nil, nil, APIError("InvalidParameterValue", fmt.Sprintf("Value ( %d ) for parameter maxResults is invalid. Expecting a value between %d and %d.", *maxResults, lo, hi))
	}
	end := min(start+int(*maxResults), len(items))
	if end == len(items) {
		return items[start:end], nil, nil
	}
	return items[start:end], ptr(fmt.Sprintf("page-%d", end)), nil
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
