package fake

import (
	"errors"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
)

func TestMatchFiltersAsEC2(t *testing.T) {
	tags := Tags(map[string]string{"team": "web", "env": "prod"})
	fields := func(name string) ([]string, bool) {
		if name == "state" {
			return []string{"available"}, true
		}
		return tagFields(tags, name)
	}
	filter := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: &name, Values: values}
	}
	for name, tc := range map[string]struct {
		filters []ec2types.Filter
		want    bool
		wantErr string
	}{
		"no filters":                        {want: true},
		"values within a filter OR":         {filters: []ec2types.Filter{filter("tag:team", "api", "web")}, want: true},
		"filters AND":                       {filters: []ec2types.Filter{filter("tag:team", "web"), filter("tag:env", "dev")}, want: false},
		"tag-key":                           {filters: []ec2types.Filter{filter("tag-key", "env")}, want: true},
		"a missing tag":                     {filters: []ec2types.Filter{filter("tag:owner", "*")}, want: false},
		"a wildcard value":                  {filters: []ec2types.Filter{filter("tag:env", "pr*")}, want: true},
		"an unsupported filter is an error": {filters: []ec2types.Filter{filter("colour", "red")}, wantErr: "InvalidParameterValue"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := matchFilters(tc.filters, fields)
			if tc.wantErr != "" {
				var apiErr smithy.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tc.wantErr {
					t.Errorf("error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("matchFilters = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestPage(t *testing.T) {
	items := []int{1, 2, 3, 4, 5, 6, 7}
	var got []int
	var token *string
	for calls := 0; ; calls++ {
		if calls > 3 {
			t.Fatal("pagination did not end")
		}
		out, next, err := page(items, ptr(int32(5)), token, 5, 1000)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out...)
		if next == nil {
			break
		}
		token = next
	}
	if diff := cmp.Diff(items, got); diff != "" {
		t.Errorf("pages (-want,+got)\n%s", diff)
	}
	if all, next, err := page(items, nil, nil, 5, 1000); len(all) != 7 || next != nil || err != nil {
		t.Errorf("no MaxResults: %v, %v, %v; want every item on one page", all, next, err)
	}
	if _, _, err := page(items, ptr(int32(2)), nil, 5, 1000); err == nil {
		t.Error("MaxResults below the API's minimum accepted")
	}
	if _, _, err := page(items, ptr(int32(5)), ptr("not-a-token"), 5, 1000); err == nil {
		t.Error("a token the fake never gave accepted")
	}
}
