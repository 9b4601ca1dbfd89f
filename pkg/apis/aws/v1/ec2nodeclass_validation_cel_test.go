package v1_test

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

const (
	specPath      = "spec"
	subnetsPath   = "spec.subnetSelectorTerms"
	sgsPath       = "spec.securityGroupSelectorTerms"
	crsPath       = "spec.capacityReservationSelectorTerms"
	amisPath      = "spec.amiSelectorTerms"
	tagsPath      = "spec.tags"
	kubeletPath   = "spec.kubelet"
	bdmsPath      = "spec.blockDeviceMappings"
	nisPath       = "spec.networkInterfaces"
	conntrackPath = "spec.connectionTracking"
	metadataPath  = "spec.metadataOptions"
)

var families = []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket,
	awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025}

func subnets(terms ...awsv1.SubnetSelectorTerm) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.SubnetSelectorTerms = terms }
}

func sgs(terms ...awsv1.SecurityGroupSelectorTerm) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.SecurityGroupSelectorTerms = terms }
}

func crs(terms ...awsv1.CapacityReservationSelectorTerm) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.CapacityReservationSelectorTerms = terms }
}

// amis sets the AMI terms; a family other than "" is set as amiFamily.
func amis(family string, terms ...awsv1.AMISelectorTerm) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = terms
		nc.Spec.AMIFamily = nil
		if family != "" {
			nc.Spec.AMIFamily = ptr.To(family)
		}
	}
}

func tags(t map[string]string) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = t }
}

func kubelet(k awsv1.KubeletConfiguration) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &k }
}

func conntrack(c awsv1.ConnectionTracking) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.ConnectionTracking = &c }
}

func bdms(m ...*awsv1.BlockDeviceMapping) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.BlockDeviceMappings = m }
}

func nis(n ...*awsv1.NetworkInterface) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.NetworkInterfaces = n }
}

func ni(card, device int32, kind awsv1.InterfaceType) *awsv1.NetworkInterface {
	return &awsv1.NetworkInterface{NetworkCardIndex: card, DeviceIndex: device, InterfaceType: kind}
}

func ebs(size string) *awsv1.BlockDeviceMapping {
	q := resource.MustParse(size)
	return &awsv1.BlockDeviceMapping{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &q, VolumeType: ptr.To("gp3")}}
}

func manyTags(n int) map[string]string {
	out := map[string]string{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("key-%d", i)] = "v"
	}
	return out
}

func TestEC2NodeClassSelectorTermsRejected(t *testing.T) {
	tagged := map[string]string{"team": "a"}
	many := make([]awsv1.SubnetSelectorTerm, 31)
	manySGs := make([]awsv1.SecurityGroupSelectorTerm, 31)
	manyCRs := make([]awsv1.CapacityReservationSelectorTerm, 31)
	manyAMIs := make([]awsv1.AMISelectorTerm, 31)
	for i := range many {
		many[i] = awsv1.SubnetSelectorTerm{ID: fmt.Sprintf("subnet-%d", i)}
		manySGs[i] = awsv1.SecurityGroupSelectorTerm{ID: fmt.Sprintf("sg-%d", i)}
		manyCRs[i] = awsv1.CapacityReservationSelectorTerm{ID: fmt.Sprintf("cr-%d", i)}
		manyAMIs[i] = awsv1.AMISelectorTerm{ID: fmt.Sprintf("ami-%d", i)}
	}
	expectRejected(t, map[string]tc{
		// Subnets.
		"subnets null":                    {raw: set(nil, "spec", "subnetSelectorTerms"), want: []string{subnetsPath, "Required value"}},
		"subnets empty":                   {raw: set([]interface{}{}, "spec", "subnetSelectorTerms"), want: []string{subnetsPath, "subnetSelectorTerms cannot be empty"}},
		"subnets missing":                 {raw: func(u map[string]interface{}) { delete(u["spec"].(map[string]interface{}), "subnetSelectorTerms") }, want: []string{subnetsPath, "Required value"}},
		"subnet term empty":               {edit: subnets(awsv1.SubnetSelectorTerm{}), want: []string{subnetsPath, "expected at least one, got none, ['tags', 'id']"}},
		"subnet term empty tag map":       {edit: subnets(awsv1.SubnetSelectorTerm{Tags: map[string]string{}}), want: []string{subnetsPath, "expected at least one, got none"}},
		"subnet tag empty value":          {edit: subnets(awsv1.SubnetSelectorTerm{Tags: map[string]string{"test": ""}}), want: []string{subnetsPath + "[0].tags", "empty tag keys or values aren't supported"}},
		"subnet tag empty key":            {edit: subnets(awsv1.SubnetSelectorTerm{Tags: map[string]string{"": "v"}}), want: []string{subnetsPath + "[0].tags", "empty tag keys or values aren't supported"}},
		"subnet last term invalid":        {edit: subnets(awsv1.SubnetSelectorTerm{Tags: tagged}, awsv1.SubnetSelectorTerm{Tags: map[string]string{"": "v"}}), want: []string{subnetsPath + "[1].tags", "empty tag keys or values"}},
		"subnet id with tags":             {edit: subnets(awsv1.SubnetSelectorTerm{ID: "subnet-12345749", Tags: tagged}), want: []string{subnetsPath, "'id' is mutually exclusive"}},
		"subnet id malformed":             {edit: subnets(awsv1.SubnetSelectorTerm{ID: "sn-12345"}), want: []string{subnetsPath + "[0].id", "should match"}},
		"subnet more than 20 tags":        {edit: subnets(awsv1.SubnetSelectorTerm{Tags: manyTags(21)}), want: []string{subnetsPath + "[0].tags", "must have at most 20"}},
		"more than 30 subnet terms":       {edit: subnets(many...), want: []string{subnetsPath, "must have at most 30"}},
		"subnet term is a string":         {raw: set([]interface{}{"subnet-1"}, "spec", "subnetSelectorTerms"), want: []string{subnetsPath + "[0]", "must be of type object"}},
		"subnet term tags is a list":      {raw: set([]interface{}{map[string]interface{}{"tags": []interface{}{"a"}}}, "spec", "subnetSelectorTerms"), want: []string{subnetsPath + "[0].tags", "must be of type object"}},
		"subnet id with tags in 2nd term": {edit: subnets(awsv1.SubnetSelectorTerm{ID: "subnet-1", Tags: tagged}, awsv1.SubnetSelectorTerm{ID: "subnet-2", Tags: tagged}), want: []string{subnetsPath, "'id' is mutually exclusive"}},

		// Security groups.
		"security groups null":         {raw: set(nil, "spec", "securityGroupSelectorTerms"), want: []string{sgsPath, "Required value"}},
		"security groups empty":        {raw: set([]interface{}{}, "spec", "securityGroupSelectorTerms"), want: []string{sgsPath, "securityGroupSelectorTerms cannot be empty"}},
		"sg term empty":                {edit: sgs(awsv1.SecurityGroupSelectorTerm{}), want: []string{sgsPath, "expected at least one, got none, ['tags', 'id', 'name']"}},
		"sg term empty tag map":        {edit: sgs(awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{}}), want: []string{sgsPath, "expected at least one, got none"}},
		"sg tag empty value":           {edit: sgs(awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{"test": ""}}), want: []string{sgsPath + "[0].tags", "empty tag keys or values"}},
		"sg tag empty key":             {edit: sgs(awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{"": "v"}}), want: []string{sgsPath + "[0].tags", "empty tag keys or values"}},
		"sg last term invalid":         {edit: sgs(awsv1.SecurityGroupSelectorTerm{Name: "a"}, awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{"": "v"}}), want: []string{sgsPath + "[1].tags", "empty tag keys or values"}},
		"sg id with tags":              {edit: sgs(awsv1.SecurityGroupSelectorTerm{ID: "sg-12345749", Tags: tagged}), want: []string{sgsPath, "'id' is mutually exclusive"}},
		"sg id with name":              {edit: sgs(awsv1.SecurityGroupSelectorTerm{ID: "sg-12345749", Name: "my-sg"}), want: []string{sgsPath, "'id' is mutually exclusive"}},
		"sg name with tags":            {edit: sgs(awsv1.SecurityGroupSelectorTerm{Name: "my-sg", Tags: tagged}), want: []string{sgsPath, "'name' is mutually exclusive"}},
		"sg id malformed":              {edit: sgs(awsv1.SecurityGroupSelectorTerm{ID: "group-1"}), want: []string{sgsPath + "[0].id", "should match"}},
		"sg more than 20 tags":         {edit: sgs(awsv1.SecurityGroupSelectorTerm{Tags: manyTags(21)}), want: []string{sgsPath + "[0].tags", "must have at most 20"}},
		"more than 30 sg terms":        {edit: sgs(manySGs...), want: []string{sgsPath, "must have at most 30"}},
		"sg name is a number":          {raw: set([]interface{}{map[string]interface{}{"name": int64(3)}}, "spec", "securityGroupSelectorTerms"), want: []string{sgsPath + "[0].name", "must be of type string"}},
		"sg id and name in every term": {edit: sgs(awsv1.SecurityGroupSelectorTerm{ID: "sg-1", Name: "a"}, awsv1.SecurityGroupSelectorTerm{ID: "sg-2", Name: "b"}), want: []string{sgsPath, "'id' is mutually exclusive"}},

		// Capacity reservations.
		"cr term empty":                 {edit: crs(awsv1.CapacityReservationSelectorTerm{}), want: []string{crsPath, "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']"}},
		"cr term empty tag map":         {edit: crs(awsv1.CapacityReservationSelectorTerm{Tags: map[string]string{}}), want: []string{crsPath, "expected at least one, got none"}},
		"cr tag empty value":            {edit: crs(awsv1.CapacityReservationSelectorTerm{Tags: map[string]string{"test": ""}}), want: []string{crsPath + "[0].tags", "empty tag keys or values"}},
		"cr tag empty key":              {edit: crs(awsv1.CapacityReservationSelectorTerm{Tags: map[string]string{"": "v"}}), want: []string{crsPath + "[0].tags", "empty tag keys or values"}},
		"cr id malformed":               {edit: crs(awsv1.CapacityReservationSelectorTerm{ID: "r-12345749"}), want: []string{crsPath + "[0].id", "should match"}},
		"cr id with tags":               {edit: crs(awsv1.CapacityReservationSelectorTerm{ID: "cr-12345749", Tags: tagged}), want: []string{crsPath, "'id' is mutually exclusive"}},
		"cr id with owner":              {edit: crs(awsv1.CapacityReservationSelectorTerm{ID: "cr-12345749", OwnerID: "012345678901"}), want: []string{crsPath, "'id' is mutually exclusive"}},
		"cr id with match criteria":     {edit: crs(awsv1.CapacityReservationSelectorTerm{ID: "cr-12345749", InstanceMatchCriteria: "open"}), want: []string{crsPath, "'id' is mutually exclusive"}},
		"cr owner alone":                {edit: crs(awsv1.CapacityReservationSelectorTerm{OwnerID: "012345678901"}), want: []string{crsPath, "expected at least one, got none"}},
		"cr owner too short":            {edit: crs(awsv1.CapacityReservationSelectorTerm{OwnerID: "01234567890", Tags: tagged}), want: []string{crsPath + "[0].ownerID", "should match"}},
		"cr owner not digits":           {edit: crs(awsv1.CapacityReservationSelectorTerm{OwnerID: "01234567890a", Tags: tagged}), want: []string{crsPath + "[0].ownerID", "should match"}},
		"cr match criteria unsupported": {edit: crs(awsv1.CapacityReservationSelectorTerm{InstanceMatchCriteria: "closed"}), want: []string{crsPath + "[0].instanceMatchCriteria", "Unsupported value"}},
		"more than 30 cr terms":         {edit: crs(manyCRs...), want: []string{crsPath, "must have at most 30"}},
		"cr more than 20 tags":          {edit: crs(awsv1.CapacityReservationSelectorTerm{Tags: manyTags(21)}), want: []string{crsPath + "[0].tags", "must have at most 20"}},

		// AMIs.
		"amis empty":                   {raw: set([]interface{}{}, "spec", "amiSelectorTerms"), want: []string{amisPath, "should have at least 1 items"}},
		"amis null":                    {raw: set(nil, "spec", "amiSelectorTerms"), want: []string{amisPath, "Required value"}},
		"ami term empty":               {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{}), want: []string{amisPath, "expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']"}},
		"ami owner alone":              {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{Owner: "self"}), want: []string{amisPath, "expected at least one, got none"}},
		"ami term empty tag map":       {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{Tags: map[string]string{}}), want: []string{amisPath, "expected at least one, got none"}},
		"ami tag empty value":          {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{Tags: map[string]string{"test": ""}}), want: []string{amisPath + "[0].tags", "empty tag keys or values"}},
		"ami tag empty key":            {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{Tags: map[string]string{"": "v"}}), want: []string{amisPath + "[0].tags", "empty tag keys or values"}},
		"ami id malformed":             {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{ID: "img-123"}), want: []string{amisPath + "[0].id", "should match"}},
		"ami id with tags":             {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{ID: "ami-123", Tags: tagged}), want: []string{amisPath, "'id' is mutually exclusive, cannot be set with a combination of other fields"}},
		"ami id with name":             {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{ID: "ami-123", Name: "my-ami"}), want: []string{amisPath, "'id' is mutually exclusive"}},
		"ami id with owner":            {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{ID: "ami-123", Owner: "self"}), want: []string{amisPath, "'id' is mutually exclusive"}},
		"ami id with tags in 2nd term": {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{Name: "a"}, awsv1.AMISelectorTerm{ID: "ami-123", Tags: tagged}), want: []string{amisPath, "'id' is mutually exclusive"}},
		"alias with id":                {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@latest", ID: "ami-123"}), want: []string{amisPath, "'alias' is mutually exclusive, cannot be set with a combination of other fields"}},
		"alias with tags":              {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@latest", Tags: tagged}), want: []string{amisPath, "'alias' is mutually exclusive, cannot be set with a combination of other fields"}},
		"alias with name":              {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@latest", Name: "a"}), want: []string{amisPath, "'alias' is mutually exclusive"}},
		"alias with owner":             {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@latest", Owner: "self"}), want: []string{amisPath, "'alias' is mutually exclusive"}},
		"alias with another term":      {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@latest"}, awsv1.AMISelectorTerm{ID: "ami-123"}), want: []string{amisPath, "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"}},
		"two aliases":                  {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@latest"}, awsv1.AMISelectorTerm{Alias: "al2@latest"}), want: []string{amisPath, "cannot be set with a combination of other amiSelectorTerms"}},
		"alias without version":        {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023"}), want: []string{amisPath + "[0].alias", "'alias' is improperly formatted, must match the format 'family@version'"}},
		"alias without family":         {edit: amis("", awsv1.AMISelectorTerm{Alias: "@latest"}), want: []string{amisPath + "[0].alias", "improperly formatted"}},
		"alias with empty version":     {edit: amis("", awsv1.AMISelectorTerm{Alias: "al2023@"}), want: []string{amisPath + "[0].alias", "improperly formatted"}},
		"alias family ubuntu":          {edit: amis(awsv1.AMIFamilyCustom, awsv1.AMISelectorTerm{Alias: "ubuntu@latest"}), want: []string{amisPath + "[0].alias", "family is not supported"}},
		"alias family upper case":      {edit: amis("", awsv1.AMISelectorTerm{Alias: "AL2023@latest"}), want: []string{amisPath + "[0].alias", "family is not supported"}},
		"alias windows2019 pinned":     {edit: amis("", awsv1.AMISelectorTerm{Alias: "windows2019@v1.0.0"}), want: []string{amisPath + "[0].alias", "windows families may only specify version 'latest'"}},
		"alias windows2022 pinned":     {edit: amis("", awsv1.AMISelectorTerm{Alias: "windows2022@v1.0.0"}), want: []string{amisPath + "[0].alias", "windows families may only specify version 'latest'"}},
		"alias windows2025 pinned":     {edit: amis("", awsv1.AMISelectorTerm{Alias: "windows2025@v1.0.0"}), want: []string{amisPath + "[0].alias", "windows families may only specify version 'latest'"}},
		"alias longer than 30":         {edit: amis("", awsv1.AMISelectorTerm{Alias: "bottlerocket@v1.2.3-" + strings.Repeat("a", 20)}), want: []string{amisPath + "[0].alias", "may not be more than 30 bytes"}},
		"more than 30 ami terms":       {edit: amis(awsv1.AMIFamilyAL2023, manyAMIs...), want: []string{amisPath, "must have at most 30"}},
		"ami more than 20 tags":        {edit: amis(awsv1.AMIFamilyAL2023, awsv1.AMISelectorTerm{Tags: manyTags(21)}), want: []string{amisPath + "[0].tags", "must have at most 20"}},
	})
}

func TestEC2NodeClassAMIFamilyRejected(t *testing.T) {
	cases := map[string]tc{
		"family ubuntu":             {edit: amis("Ubuntu", awsv1.AMISelectorTerm{ID: "ami-123"}), want: []string{"spec.amiFamily", "Unsupported value"}},
		"family lower case":         {edit: amis("al2023", awsv1.AMISelectorTerm{ID: "ami-123"}), want: []string{"spec.amiFamily", "Unsupported value"}},
		"no family and no alias":    {edit: amis("", awsv1.AMISelectorTerm{ID: "ami-123"}), want: []string{specPath, "must specify amiFamily if amiSelectorTerms does not contain an alias"}},
		"no family with tags term":  {edit: amis("", awsv1.AMISelectorTerm{Tags: map[string]string{"a": "b"}}), want: []string{specPath, "must specify amiFamily"}},
		"no family with ssm term":   {edit: amis("", awsv1.AMISelectorTerm{SSMParameter: "/my/ami"}), want: []string{specPath, "must specify amiFamily"}},
		"no family with name term":  {edit: amis("", awsv1.AMISelectorTerm{Name: "my-ami-*", Owner: "self"}), want: []string{specPath, "must specify amiFamily"}},
		"role and instance profile": {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.InstanceProfile = ptr.To("profile") }, want: []string{specPath, "must specify exactly one of ['role', 'instanceProfile']"}},
		"neither role nor profile":  {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = "" }, want: []string{specPath, "must specify exactly one of ['role', 'instanceProfile']"}},
		"empty role":                {raw: set("", "spec", "role"), want: []string{"spec.role", "role cannot be empty"}},
		"empty instance profile":    {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = ""; nc.Spec.InstanceProfile = ptr.To("") }, want: []string{"spec.instanceProfile", "instanceProfile cannot be empty"}},
	}
	// Every alias family paired with every other family is rejected, with
	// the message naming the alias' family.
	for _, aliasFamily := range families {
		for _, family := range families {
			if family == aliasFamily {
				continue
			}
			alias := strings.ToLower(aliasFamily) + "@latest"
			cases[fmt.Sprintf("family %s with alias %s", family, alias)] = tc{
				edit: amis(family, awsv1.AMISelectorTerm{Alias: alias}),
				want: []string{specPath, fmt.Sprintf("if set, amiFamily must be '%s' or 'Custom' when using", aliasFamily)},
			}
		}
	}
	expectRejected(t, cases)
}

func TestEC2NodeClassFieldsRejected(t *testing.T) {
	negative := resource.MustParse("-1Gi")
	many := make([]*awsv1.BlockDeviceMapping, 51)
	for i := range many {
		many[i] = ebs("20Gi")
		many[i].DeviceName = ptr.To(fmt.Sprintf("/dev/xvd%d", i))
	}
	manyNIs := []*awsv1.NetworkInterface{ni(0, 0, awsv1.InterfaceTypeInterface)}
	for i := int32(1); i <= 150; i++ {
		manyNIs = append(manyNIs, ni(i, 0, awsv1.InterfaceTypeInterface))
	}
	expectRejected(t, map[string]tc{
		// Tags.
		"tag empty key":                      {edit: tags(map[string]string{"": "v"}), want: []string{tagsPath, "empty tag keys aren't supported"}},
		"tag eks:eks-cluster-name":           {edit: tags(map[string]string{"eks:eks-cluster-name": "test"}), want: []string{tagsPath, "tag contains a restricted tag matching eks:eks-cluster-name"}},
		"tag kubernetes.io/cluster/<name>":   {edit: tags(map[string]string{"kubernetes.io/cluster/test": "owned"}), want: []string{tagsPath, "tag contains a restricted tag matching kubernetes.io/cluster/"}},
		"tag karpenter.sh/nodepool":          {edit: tags(map[string]string{"karpenter.sh/nodepool": "default"}), want: []string{tagsPath, "tag contains a restricted tag matching karpenter.sh/nodepool"}},
		"tag karpenter.sh/nodeclaim":         {edit: tags(map[string]string{"karpenter.sh/nodeclaim": "x"}), want: []string{tagsPath, "tag contains a restricted tag matching karpenter.sh/nodeclaim"}},
		"tag karpenter.k8s.aws/ec2nodeclass": {edit: tags(map[string]string{"karpenter.k8s.aws/ec2nodeclass": "x"}), want: []string{tagsPath, "tag contains a restricted tag matching karpenter.k8s.aws/ec2nodeclass"}},
		"tag value is a number":              {raw: set(map[string]interface{}{"team": int64(1)}, "spec", "tags"), want: []string{tagsPath + ".team", "must be of type string"}},

		// Connection tracking and CPU options.
		"connection tracking empty":            {raw: set(map[string]interface{}{}, "spec", "connectionTracking"), want: []string{"spec.connectionTracking", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"}},
		"tcp established timeout below 60":     {edit: conntrack(awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](59)}), want: []string{conntrackPath + ".tcpEstablishedTimeout", "should be greater than or equal to 60"}},
		"tcp established timeout above 5 days": {edit: conntrack(awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr.To[int32](432001)}), want: []string{conntrackPath + ".tcpEstablishedTimeout", "should be less than or equal to 432000"}},
		"udp stream timeout below 60":          {edit: conntrack(awsv1.ConnectionTracking{UDPStreamTimeout: ptr.To[int32](59)}), want: []string{conntrackPath + ".udpStreamTimeout", "should be greater than or equal to 60"}},
		"udp stream timeout above 180":         {edit: conntrack(awsv1.ConnectionTracking{UDPStreamTimeout: ptr.To[int32](181)}), want: []string{conntrackPath + ".udpStreamTimeout", "should be less than or equal to 180"}},
		"udp timeout below 30":                 {edit: conntrack(awsv1.ConnectionTracking{UDPTimeout: ptr.To[int32](29)}), want: []string{conntrackPath + ".udpTimeout", "should be greater than or equal to 30"}},
		"udp timeout above 60":                 {edit: conntrack(awsv1.ConnectionTracking{UDPTimeout: ptr.To[int32](61)}), want: []string{conntrackPath + ".udpTimeout", "should be less than or equal to 60"}},
		"nested virtualization unsupported":    {raw: set("on", "spec", "cpuOptions", "nestedVirtualization"), want: []string{"spec.cpuOptions.nestedVirtualization", "Unsupported value"}},
		// spec.kubelet is an open map: only its type is the API server's
		// (ValidateKubelet checks the rest, see ec2nodeclass_kubelet_test.go).
		"kubelet is a string": {raw: set("maxPods=110", "spec", "kubelet"), want: []string{kubeletPath, "must be of type object"}},

		// Block devices.
		"two root volumes": {edit: func(nc *awsv1.EC2NodeClass) {
			a, b := ebs("20Gi"), ebs("40Gi")
			a.RootVolume, b.RootVolume = true, true
			b.DeviceName = ptr.To("/dev/xvdb")
			nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{a, b}
		}, want: []string{bdmsPath, "must have only one blockDeviceMappings with rootVolume"}},
		"more than 50 block devices":            {edit: bdms(many...), want: []string{bdmsPath, "must have at most 50"}},
		"ebs without size or snapshot":          {edit: bdms(&awsv1.BlockDeviceMapping{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeType: ptr.To("gp3")}}), want: []string{bdmsPath + "[0].ebs", "snapshotID or volumeSize must be defined"}},
		"init rate without snapshot":            {edit: bdms(&awsv1.BlockDeviceMapping{EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("20Gi")), VolumeInitializationRate: ptr.To[int32](200)}}), want: []string{bdmsPath + "[0].ebs", "snapshotID must be set when volumeInitializationRate is set"}},
		"init rate with empty snapshot":         {edit: bdms(&awsv1.BlockDeviceMapping{EBS: &awsv1.BlockDevice{SnapshotID: ptr.To(""), VolumeInitializationRate: ptr.To[int32](200)}}), want: []string{bdmsPath + "[0].ebs", "snapshotID must be set when volumeInitializationRate is set"}},
		"init rate below 100":                   {edit: bdms(&awsv1.BlockDeviceMapping{EBS: &awsv1.BlockDevice{SnapshotID: ptr.To("snap-1"), VolumeInitializationRate: ptr.To[int32](99)}}), want: []string{bdmsPath + "[0].ebs.volumeInitializationRate", "should be greater than or equal to 100"}},
		"init rate above 300":                   {edit: bdms(&awsv1.BlockDeviceMapping{EBS: &awsv1.BlockDevice{SnapshotID: ptr.To("snap-1"), VolumeInitializationRate: ptr.To[int32](301)}}), want: []string{bdmsPath + "[0].ebs.volumeInitializationRate", "should be less than or equal to 300"}},
		"volume type unsupported":               {edit: bdms(&awsv1.BlockDeviceMapping{EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("20Gi")), VolumeType: ptr.To("gp4")}}), want: []string{bdmsPath + "[0].ebs.volumeType", "Unsupported value"}},
		"volume size 0Gi":                       {edit: bdms(ebs("0Gi")), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size above 59000Gi":             {edit: bdms(ebs("59001Gi")), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size above 64000G":              {edit: bdms(ebs("64001G")), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size above 58Ti":                {edit: bdms(ebs("59Ti")), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size above 64T":                 {edit: bdms(ebs("65T")), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size in Mi":                     {edit: bdms(ebs("512Mi")), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size negative":                  {edit: bdms(&awsv1.BlockDeviceMapping{EBS: &awsv1.BlockDevice{VolumeSize: &negative}}), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"volume size without unit":              {raw: set([]interface{}{map[string]interface{}{"ebs": map[string]interface{}{"volumeSize": "20"}}}, "spec", "blockDeviceMappings"), want: []string{bdmsPath + "[0].ebs.volumeSize", "should match"}},
		"root volume flag is a string":          {raw: set([]interface{}{map[string]interface{}{"rootVolume": "yes"}}, "spec", "blockDeviceMappings"), want: []string{bdmsPath + "[0].rootVolume", "must be of type boolean"}},
		"instance store policy unsupported":     {raw: set("RAID1", "spec", "instanceStorePolicy"), want: []string{"spec.instanceStorePolicy", "Unsupported value"}},
		"ip prefix count negative":              {edit: func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = ptr.To[int32](-1) }, want: []string{"spec.ipPrefixCount", "should be greater than or equal to 0"}},
		"detailed monitoring is a string":       {raw: set("true", "spec", "detailedMonitoring"), want: []string{"spec.detailedMonitoring", "must be of type boolean"}},
		"associate public IP is a string":       {raw: set("false", "spec", "associatePublicIPAddress"), want: []string{"spec.associatePublicIPAddress", "must be of type boolean"}},
		"metadata httpEndpoint unsupported":     {raw: set("on", "spec", "metadataOptions", "httpEndpoint"), want: []string{metadataPath + ".httpEndpoint", "Unsupported value"}},
		"metadata httpProtocolIPv6 unsupported": {raw: set("yes", "spec", "metadataOptions", "httpProtocolIPv6"), want: []string{metadataPath + ".httpProtocolIPv6", "Unsupported value"}},
		"metadata httpTokens unsupported":       {raw: set("sometimes", "spec", "metadataOptions", "httpTokens"), want: []string{metadataPath + ".httpTokens", "Unsupported value"}},
		"metadata hop limit 0":                  {raw: set(int64(0), "spec", "metadataOptions", "httpPutResponseHopLimit"), want: []string{metadataPath + ".httpPutResponseHopLimit", "should be greater than or equal to 1"}},
		"metadata hop limit 65":                 {raw: set(int64(65), "spec", "metadataOptions", "httpPutResponseHopLimit"), want: []string{metadataPath + ".httpPutResponseHopLimit", "should be less than or equal to 64"}},

		// Network interfaces.
		"interfaces without primary":          {edit: nis(ni(0, 1, awsv1.InterfaceTypeInterface)), want: []string{nisPath, "networkInterfaces must include a primary interface with interfaceType='interface'"}},
		"interfaces with efa-only primary":    {edit: nis(ni(0, 0, awsv1.InterfaceTypeEFAOnly)), want: []string{nisPath, "networkInterfaces must include a primary interface with interfaceType='interface'"}},
		"interfaces duplicate card and index": {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface), ni(1, 0, awsv1.InterfaceTypeEFAOnly), ni(1, 0, awsv1.InterfaceTypeInterface)), want: []string{nisPath, "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"}},
		"two efa-only on one card":            {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface), ni(1, 0, awsv1.InterfaceTypeEFAOnly), ni(1, 1, awsv1.InterfaceTypeEFAOnly)), want: []string{nisPath, "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"}},
		"interface type unsupported":          {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface), ni(1, 0, "efa")), want: []string{nisPath + "[1].interfaceType", "Unsupported value"}},
		"interface card index negative":       {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface), ni(-1, 0, awsv1.InterfaceTypeEFAOnly)), want: []string{nisPath + "[1].networkCardIndex", "should be greater than or equal to 0"}},
		"interface device index negative":     {edit: nis(ni(0, 0, awsv1.InterfaceTypeInterface), ni(1, -1, awsv1.InterfaceTypeEFAOnly)), want: []string{nisPath + "[1].deviceIndex", "should be greater than or equal to 0"}},
		"interface without type":              {raw: set([]interface{}{map[string]interface{}{"networkCardIndex": int64(0), "deviceIndex": int64(0)}}, "spec", "networkInterfaces"), want: []string{nisPath + "[0].interfaceType", "Required value"}},
		"more than 150 interfaces":            {edit: nis(manyNIs...), want: []string{nisPath, "must have at most 150"}},
	})
}
