package v1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

func hashNodeClass() *awsv1.EC2NodeClass {
	nc := validNodeClass()
	nc.Spec.Tags = map[string]string{"team": "a", "env": "prod"}
	nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{ebs("20Gi"), {DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: ptr.To("snap-1")}}}
	nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPTokens: ptr.To("required"), HTTPPutResponseHopLimit: ptr.To[int64](1)}
	return nc
}

// Every launch setting drifts nodes; selectors, the IP prefix count and
// status do not, and neither does spelling out the alias' own family.
func TestHash(t *testing.T) {
	base := hashNodeClass().Hash()
	changes := map[string]struct {
		edit  func(*awsv1.EC2NodeClass)
		drift bool
	}{
		"user data":        {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.UserData = ptr.To("#!/bin/bash") }, drift: true},
		"role":             {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = "other" }, drift: true},
		"instance profile": {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = ""; nc.Spec.InstanceProfile = ptr.To("p") }, drift: true},
		"tag value":        {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags["team"] = "b" }, drift: true},
		"kubelet maxPods": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](20)}
		}, drift: true},
		"kubelet maxPods expression": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPodsExpression: ptr.To("max_pods")}
		}, drift: true},
		"kubelet passthrough field": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{Extra: awsv1.KubeletExtra{"cpuManagerPolicy": {Raw: []byte(`"static"`)}}}
		}, drift: true},
		"nested virtualization": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr.To(awsv1.NestedVirtualizationEnabled)}
		}, drift: true},
		"connection tracking": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr.To[int32](60)}
		}, drift: true},
		"volume size": {edit: func(nc *awsv1.EC2NodeClass) {
			q := resource.MustParse("30Gi")
			nc.Spec.BlockDeviceMappings[0].EBS.VolumeSize = &q
		}, drift: true},
		"instance store":       {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) }, drift: true},
		"detailed monitoring":  {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.DetailedMonitoring = ptr.To(true) }, drift: true},
		"public IP":            {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = ptr.To(true) }, drift: true},
		"metadata hop limit":   {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.MetadataOptions.HTTPPutResponseHopLimit = ptr.To[int64](2) }, drift: true},
		"context":              {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Context = ptr.To("c") }, drift: true},
		"network interfaces":   {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface)), drift: true},
		"family Custom":        {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyCustom) }, drift: true},
		"alias family changes": {edit: amis("", awsv1.AMISelectorTerm{Alias: "bottlerocket@latest"}), drift: true},
		"family spelled out":   {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2023) }},
		"alias version":        {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@v20240625"})},
		"subnet selector":      {edit: subnets(awsv1.SubnetSelectorTerm{ID: "subnet-1"})},
		"sg selector":          {edit: sgs(awsv1.SecurityGroupSelectorTerm{Name: "x"})},
		"cr selector":          {edit: crs(awsv1.CapacityReservationSelectorTerm{ID: "cr-1"})},
		"ip prefix count":      {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = ptr.To[int32](3) }},
		"status": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Status.InstanceProfile = "p"
			nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-1"}}
		}},
		"name and labels": {edit: func(nc *awsv1.EC2NodeClass) { nc.Name = "other"; nc.Labels = map[string]string{"a": "b"} }},
		"volume order": {edit: func(nc *awsv1.EC2NodeClass) {
			b := nc.Spec.BlockDeviceMappings
			b[0], b[1] = b[1], b[0]
		}},
	}
	for name, c := range changes {
		t.Run(name, func(t *testing.T) {
			nc := hashNodeClass()
			c.edit(nc)
			got := nc.Hash()
			if drift := got != base; drift != c.drift {
				t.Errorf("hash %s -> %s: drift = %v, want %v", base, got, drift, c.drift)
			}
		})
	}
	if base != hashNodeClass().Hash() {
		t.Error("hash of equal classes differs")
	}
}

func TestAlias(t *testing.T) {
	tests := map[string]struct {
		terms      []awsv1.AMISelectorTerm
		family     *string
		wantAlias  *awsv1.Alias
		wantFamily string
	}{
		"al2023 latest":        {terms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, wantAlias: &awsv1.Alias{Family: "AL2023", Version: "latest"}, wantFamily: "AL2023"},
		"bottlerocket pinned":  {terms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.20.3"}}, wantAlias: &awsv1.Alias{Family: "Bottlerocket", Version: "v1.20.3"}, wantFamily: "Bottlerocket"},
		"windows2025":          {terms: []awsv1.AMISelectorTerm{{Alias: "windows2025@latest"}}, wantAlias: &awsv1.Alias{Family: "Windows2025", Version: "latest"}, wantFamily: "Windows2025"},
		"alias with Custom":    {terms: []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}, family: ptr.To("Custom"), wantAlias: &awsv1.Alias{Family: "AL2", Version: "latest"}, wantFamily: "Custom"},
		"ids with family":      {terms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}, family: ptr.To("Bottlerocket"), wantFamily: "Bottlerocket"},
		"unknown alias family": {terms: []awsv1.AMISelectorTerm{{Alias: "ubuntu@latest"}}, wantFamily: "Custom"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: tc.terms, AMIFamily: tc.family}}
			if diff := cmp.Diff(tc.wantAlias, nc.Alias()); diff != "" {
				t.Errorf("Alias (-want,+got):\n%s", diff)
			}
			if got := nc.AMIFamily(); got != tc.wantFamily {
				t.Errorf("AMIFamily = %q, want %q", got, tc.wantFamily)
			}
		})
	}
	if a := (awsv1.Alias{Family: "AL2023", Version: "latest"}); a.String() != "al2023@latest" {
		t.Errorf("String = %q", a.String())
	}
	for _, bad := range []string{"al2023", "@latest", "al2023@", "debian@12"} {
		if _, err := awsv1.ParseAlias(bad); err == nil {
			t.Errorf("ParseAlias(%q) succeeded", bad)
		}
	}
}

func TestZoneInfo(t *testing.T) {
	nc := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{Subnets: []awsv1.Subnet{
		{ID: "subnet-b1", Zone: "us-west-2b", ZoneID: "usw2-az2"},
		{ID: "subnet-a1", Zone: "us-west-2a", ZoneID: "usw2-az1"},
		{ID: "subnet-b2", Zone: "us-west-2b", ZoneID: "usw2-az2"},
	}}}
	want := []awsv1.ZoneInfo{
		{Zone: "us-west-2b", ZoneID: "usw2-az2", SubnetIDs: []string{"subnet-b1", "subnet-b2"}},
		{Zone: "us-west-2a", ZoneID: "usw2-az1", SubnetIDs: []string{"subnet-a1"}},
	}
	if diff := cmp.Diff(want, nc.ZoneInfo()); diff != "" {
		t.Errorf("ZoneInfo (-want,+got):\n%s", diff)
	}
}

// Passthrough kubelet fields hash by value, whatever their order or
// spacing, and two values holding the same bytes in another order differ
// (the raw bytes are not hashed as a set).
func TestHashKubeletPassthrough(t *testing.T) {
	hash := func(raw string) string {
		nc := hashNodeClass()
		nc.Spec.Kubelet = kubeletFrom(t, raw)
		return nc.Hash()
	}
	if a, b := hash(`{"a":1,"b":"x"}`), hash(`{ "b": "x", "a": 1 }`); a != b {
		t.Errorf("key order changed the hash: %s vs %s", a, b)
	}
	if a, b := hash(`{"a":12}`), hash(`{"a":21}`); a == b {
		t.Errorf("permuted value bytes hash alike: %s", a)
	}
	if a, b := hash(`{"maxPods":"max_pods"}`), hash(`{"maxPods":"max_pods - 1"}`); a == b {
		t.Errorf("different expressions hash alike: %s", a)
	}
}
