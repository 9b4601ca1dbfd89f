package v1_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

func TestEC2NodeClassAccepted(t *testing.T) {
	tagged := map[string]string{"team": "a"}
	cases := map[string]tc{
		"minimal": {},
		"instance profile instead of role": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Role = ""
			nc.Spec.InstanceProfile = ptr.To("KarpenterNodeInstanceProfile")
		}},
		"empty user data":      {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.UserData = ptr.To("") }},
		"subnet by id":         {edit: subnets(awsv1.SubnetSelectorTerm{ID: "subnet-12345749"})},
		"subnet wildcard tags": {edit: subnets(awsv1.SubnetSelectorTerm{Tags: map[string]string{"*": "*"}})},
		"subnet 30 terms": {edit: func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = make([]awsv1.SubnetSelectorTerm, 30)
			for i := range nc.Spec.SubnetSelectorTerms {
				nc.Spec.SubnetSelectorTerms[i].ID = fmt.Sprintf("subnet-%d", i)
			}
		}},
		"subnet 20 tags": {edit: subnets(awsv1.SubnetSelectorTerm{Tags: manyTags(20)})},
		// Upstream's rule is written with all(): one term mixing id and
		// tags passes when another term does not.
		"subnet id with tags beside a plain term": {edit: subnets(awsv1.SubnetSelectorTerm{ID: "subnet-1", Tags: tagged}, awsv1.SubnetSelectorTerm{ID: "subnet-2"})},
		"sg by id":                  {edit: sgs(awsv1.SecurityGroupSelectorTerm{ID: "sg-12345749"})},
		"sg by name":                {edit: sgs(awsv1.SecurityGroupSelectorTerm{Name: "eks-cluster-sg"})},
		"sg by several terms":       {edit: sgs(awsv1.SecurityGroupSelectorTerm{ID: "sg-1"}, awsv1.SecurityGroupSelectorTerm{Name: "b"}, awsv1.SecurityGroupSelectorTerm{Tags: tagged})},
		"cr by tags":                {edit: crs(awsv1.CapacityReservationSelectorTerm{Tags: tagged})},
		"cr by id":                  {edit: crs(awsv1.CapacityReservationSelectorTerm{ID: "cr-12345749"})},
		"cr by owner and tags":      {edit: crs(awsv1.CapacityReservationSelectorTerm{OwnerID: "012345678901", Tags: tagged})},
		"cr by match criteria":      {edit: crs(awsv1.CapacityReservationSelectorTerm{InstanceMatchCriteria: "targeted"})},
		"cr open with owner":        {edit: crs(awsv1.CapacityReservationSelectorTerm{InstanceMatchCriteria: "open", OwnerID: "012345678901"})},
		"cr none":                   {edit: crs()},
		"ami by id with family":     {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{ID: "ami-0123456789abcdef"})},
		"ami by name and owner":     {edit: amis(awsv1.AMIFamilyBottlerocket, awsv1.AMISelectorTerm{Name: "bottlerocket-aws-k8s-*", Owner: "amazon"})},
		"ami by tags and owner":     {edit: amis(awsv1.AMIFamilyAL2, awsv1.AMISelectorTerm{Tags: tagged, Owner: "123456789012"})},
		"ami by ssm parameter":      {edit: amis(awsv1.AMIFamilyCustom, awsv1.AMISelectorTerm{SSMParameter: "/my/ami/id"})},
		"ami several terms":         {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{ID: "ami-1"}, awsv1.AMISelectorTerm{Name: "my-ami"}, awsv1.AMISelectorTerm{Tags: tagged})},
		"alias pinned al2023":       {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@v20240625"})},
		"alias pinned bottlerocket": {edit: amis("", awsv1.AMISelectorTerm{Alias: "bottlerocket@v1.20.3"})},
		"alias pinned al2":          {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2@v20240625"})},
		"alias 30 characters":       {edit: amis("", awsv1.AMISelectorTerm{Alias: "bottlerocket@v" + strings.Repeat("1", 16)})},
		"tags not restricted":       {edit: tags(map[string]string{"karpenter.sh/custom-key": "v", "karpenter.sh/managed": "true", "kubernetes.io/role/key": "v", "Name": "my-node"})},
		"tags empty":                {edit: tags(map[string]string{})},
		"tag empty value":           {edit: tags(map[string]string{"team": ""})},
		"kubelet full": {edit: kubelet(awsv1.KubeletConfiguration{
			ClusterDNS:                  []string{"10.0.1.100"},
			MaxPods:                     ptr.To[int32](110),
			PodsPerCore:                 ptr.To[int32](10),
			SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi", "ephemeral-storage": "1Gi", "pid": "100"},
			KubeReserved:                map[string]string{"cpu": "200m", "memory": "100Mi", "ephemeral-storage": "3Gi", "pid": "100"},
			EvictionHard:                map[string]string{"memory.available": "5%", "nodefs.available": "10%", "nodefs.inodesFree": "10%", "imagefs.available": "5%", "imagefs.inodesFree": "5%", "pid.available": "7%"},
			EvictionSoft:                map[string]string{"memory.available": "500Mi", "nodefs.available": "15%"},
			EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 60e9}, "nodefs.available": {Duration: 120e9}},
			EvictionMaxPodGracePeriod:   ptr.To[int32](60),
			ImageGCHighThresholdPercent: ptr.To[int32](85),
			ImageGCLowThresholdPercent:  ptr.To[int32](80),
			CPUCFSQuota:                 ptr.To(true),
		})},
		"kubelet thresholds in every form": {edit: kubelet(awsv1.KubeletConfiguration{
			EvictionHard:            map[string]string{"memory.available": "100Mi", "nodefs.available": "12.5%", "imagefs.available": "100%", "pid.available": "1k"},
			EvictionSoft:            map[string]string{"memory.available": "0.5Gi"},
			EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 90e9}},
			KubeReserved:            map[string]string{"cpu": "0.5", "memory": "1e9", "pid": "1000"},
		})},
		"kubelet grace periods as users write them": {raw: func(u map[string]interface{}) {
			set(map[string]interface{}{"memory.available": "5%", "nodefs.available": "10%"}, "spec", "kubelet", "evictionSoft")(u)
			set(map[string]interface{}{"memory.available": "1m30s", "nodefs.available": "500ms"}, "spec", "kubelet", "evictionSoftGracePeriod")(u)
		}},
		"kubelet maxPods 0": {edit: kubelet(awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](0)})},
		// The API server checks nothing inside spec.kubelet, as upstream's:
		// other kubelet fields, CEL expressions, and values the controller
		// refuses (ValidationSucceeded=False) are all stored.
		"kubelet passthrough fields": {raw: func(u map[string]interface{}) {
			set(int64(20), "spec", "kubelet", "registryPullQPS")(u)
			set(map[string]interface{}{"DisableCPUQuotaWithExclusiveCPUs": true}, "spec", "kubelet", "featureGates")(u)
			set("static", "spec", "kubelet", "cpuManagerPolicy")(u)
		}},
		"kubelet maxPods expression":        {raw: set("min(max_pods, 110)", "spec", "kubelet", "maxPods")},
		"kubelet maxPods negative":          {edit: kubelet(awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](-1)})},
		"kubelet imageGC high below low":    {edit: kubelet(awsv1.KubeletConfiguration{ImageGCHighThresholdPercent: ptr.To[int32](50), ImageGCLowThresholdPercent: ptr.To[int32](60)})},
		"kubelet evictionHard bad signal":   {edit: kubelet(awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory": "5%"}})},
		"kubelet clusterDNS is a string":    {raw: set("10.100.0.10", "spec", "kubelet", "clusterDNS")},
		"connection tracking every timeout": {edit: conntrack(awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](432000), UDPStreamTimeout: ptr.To[int32](60), UDPTimeout: ptr.To[int32](30)})},
		"connection tracking udp only":      {edit: conntrack(awsv1.ConnectionTracking{UDPTimeout: ptr.To[int32](60)})},
		"nested virtualization enabled":     {raw: set("enabled", "spec", "cpuOptions", "nestedVirtualization")},
		"nested virtualization disabled":    {raw: set("disabled", "spec", "cpuOptions", "nestedVirtualization")},
		"cpu options empty":                 {raw: set(map[string]interface{}{}, "spec", "cpuOptions")},
		"kubelet imageGC high only":         {edit: kubelet(awsv1.KubeletConfiguration{ImageGCHighThresholdPercent: ptr.To[int32](100)})},
		"kubelet imageGC low only":          {edit: kubelet(awsv1.KubeletConfiguration{ImageGCLowThresholdPercent: ptr.To[int32](0)})},
		"root volume": {edit: func(nc *awsv1.EC2NodeClass) {
			b := ebs("100Gi")
			b.RootVolume = true
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{b, ebs("20Gi")}
		}},
		"volume size 1Gi":      {edit: bdms(ebs("1Gi"))},
		"volume size 59000Gi":  {edit: bdms(ebs("59000Gi"))},
		"volume size 64000G":   {edit: bdms(ebs("64000G"))},
		"volume size 58Ti":     {edit: bdms(ebs("58Ti"))},
		"volume size 64T":      {edit: bdms(ebs("64T"))},
		"volume from snapshot": {edit: bdms(&awsv1.BlockDeviceMapping{DeviceName: ptr.To("/dev/xvdb"), EBS: &awsv1.BlockDevice{SnapshotID: ptr.To("snap-0123"), VolumeInitializationRate: ptr.To[int32](100)}})},
		"volume every field": {edit: bdms(&awsv1.BlockDeviceMapping{DeviceName: ptr.To("/dev/xvda"), RootVolume: true, EBS: &awsv1.BlockDevice{
			DeleteOnTermination: ptr.To(true), Encrypted: ptr.To(true), IOPS: ptr.To[int64](3000), KMSKeyID: ptr.To("arn:aws:kms:us-west-2:111122223333:key/1"),
			SnapshotID: ptr.To("snap-1"), Throughput: ptr.To[int64](125), VolumeInitializationRate: ptr.To[int32](300), VolumeSize: ptr.To(resource.MustParse("200Gi")), VolumeType: ptr.To("io2"),
		}})},
		"instance store RAID0":           {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0) }},
		"interfaces primary only":        {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface))},
		"interfaces efa-only per card":   {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface), ni(0, 1, awsv1.InterfaceTypeEFAOnly), ni(1, 0, awsv1.InterfaceTypeEFAOnly), ni(2, 0, awsv1.InterfaceTypeEFAOnly), ni(2, 1, awsv1.InterfaceTypeInterface))},
		"ip prefix count":                {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = ptr.To[int32](2) }},
		"detailed monitoring":            {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.DetailedMonitoring = ptr.To(true) }},
		"no public IP":                   {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = ptr.To(false) }},
		"context":                        {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Context = ptr.To("cr-context") }},
		"metadata hop limit 64 optional": {raw: set(map[string]interface{}{"httpEndpoint": "enabled", "httpProtocolIPv6": "enabled", "httpPutResponseHopLimit": int64(64), "httpTokens": "optional"}, "spec", "metadataOptions")},
		"metadata disabled":              {raw: set(map[string]interface{}{"httpEndpoint": "disabled"}, "spec", "metadataOptions")},
	}
	for _, family := range append(families, awsv1.AMIFamilyCustom) {
		cases["family "+family+" with an ami id"] = tc{edit: amis(family, awsv1.AMISelectorTerm{ID: "ami-0123456789abcdef"})}
		if family == awsv1.AMIFamilyCustom {
			continue
		}
		alias := strings.ToLower(family) + "@latest"
		cases["alias "+alias+" alone"] = tc{edit: amis("", awsv1.AMISelectorTerm{Alias: alias})}
		cases["alias "+alias+" with its family"] = tc{edit: amis(family, awsv1.AMISelectorTerm{Alias: alias})}
		cases["alias "+alias+" with Custom"] = tc{edit: amis(awsv1.AMIFamilyCustom, awsv1.AMISelectorTerm{Alias: alias})}
	}
	expectAccepted(t, cases, nil)
}

// metadataOptions defaults to IMDSv2 with a hop limit of 1, as a whole and
// per field.
func TestEC2NodeClassMetadataDefaults(t *testing.T) {
	full := &awsv1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPProtocolIPv6: ptr.To("disabled"), HTTPPutResponseHopLimit: ptr.To[int64](1), HTTPTokens: ptr.To("required")}
	withHop := full.DeepCopy()
	withHop.HTTPPutResponseHopLimit = ptr.To[int64](2)
	disabled := full.DeepCopy()
	disabled.HTTPEndpoint = ptr.To("disabled")
	cases := map[string]struct {
		raw  func(map[string]interface{})
		want *awsv1.MetadataOptions
	}{
		"unset":              {want: full},
		"empty object":       {raw: set(map[string]interface{}{}, "spec", "metadataOptions"), want: full},
		"only the hop limit": {raw: set(map[string]interface{}{"httpPutResponseHopLimit": int64(2)}, "spec", "metadataOptions"), want: withHop},
		"only the endpoint":  {raw: set(map[string]interface{}{"httpEndpoint": "disabled"}, "spec", "metadataOptions"), want: disabled},
	}
	for name, c := range cases {
		expectAccepted(t, map[string]tc{name: {raw: c.raw}}, func(t *testing.T, stored *awsv1.EC2NodeClass) {
			if diff := cmp.Diff(c.want, stored.Spec.MetadataOptions); diff != "" {
				t.Errorf("metadataOptions (-want,+got):\n%s", diff)
			}
		})
	}
}
