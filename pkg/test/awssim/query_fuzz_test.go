package awssim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// FuzzEC2Query posts arbitrary forms to the EC2 handler over a stateful
// fake: whatever the input, the answer is a well-formed XML document and
// never a server error (bad input is the caller's fault). The seeds run
// with every go test.
func FuzzEC2Query(f *testing.F) {
	for _, seed := range []string{
		"Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag:a&Filter.1.Value.1=b",
		"Action=DescribeInstances&Filter.1.Value.1=b",
		"Action=DescribeInstances&Filter.2.Name=x",
		"Action=CreateFleet&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large",
		"Action=CreateFleet&TargetCapacitySpecification.TotalTargetCapacity=-1",
		"Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=1&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=x",
		"Action=CreateTags&ResourceId.1=i-1&Tag.1.Key=k",
		"Action=TerminateInstances&InstanceId.1=i-missing",
		"Action=DescribeSpotPriceHistory&StartTime=2026-01-01T00:00:00Z&InstanceType.1=m5.large",
		"Action=DescribeInstanceTypes&MaxResults=0&NextToken=garbage",
		"Action=CreateLaunchTemplate&LaunchTemplateName=a&LaunchTemplateData.NetworkInterface.1.SecurityGroupId.1=sg",
		"Action=DeleteLaunchTemplate",
		"Action=DescribeImages&Owner.1=self&ImageId.1=ami-x",
		"Action=DescribeSubnets&SubnetId.1=",
		"Action=%00&Version=\xff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		h := NewEC2Handler(fake.NewEC2())
		checkAnswer(t, h, body)
	})
}

// FuzzIAMQuery is FuzzEC2Query for the IAM handler.
func FuzzIAMQuery(f *testing.F) {
	for _, seed := range []string{
		"Action=CreateInstanceProfile&InstanceProfileName=p&Tags.member.1.Key=k",
		"Action=CreateInstanceProfile&InstanceProfileName=p&Path=bad",
		"Action=AddRoleToInstanceProfile&InstanceProfileName=p",
		"Action=ListInstanceProfiles&MaxItems=0&Marker=zz",
		"Action=ListInstanceProfilesForRole&RoleName=r&MaxItems=99999",
		"Action=TagInstanceProfile&InstanceProfileName=p&Tags.member.2.Value=v",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		backend := fake.NewIAM()
		backend.AddRole("r")
		backend.AddInstanceProfile("p", "r")
		checkAnswer(t, NewIAMHandler(backend), body)
	})
}

func checkAnswer(t *testing.T, h http.Handler, body string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%q: got HTTP %d %s, want a 2xx or 4xx", body, rec.Code, rec.Body)
	}
	dec := xml.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%q: the answer is not well-formed XML (%v): %s", body, err, rec.Body)
		}
	}
}
