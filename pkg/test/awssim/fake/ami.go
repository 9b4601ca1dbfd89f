package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
)

// PublishAMI publishes an EKS-optimized AMI alias the way AWS does, so an
// EC2NodeClass with the alias resolves against the fakes exactly as it does
// against AWS: it registers one image per SSM parameter of alias (for
// example "al2023@latest") on Kubernetes k8s ("1.31"), created at created,
// and points the parameter at it. Publishing again with a later created time
// is a new release: new images, the parameters moved to them. It returns the
// image ID of each parameter path.
func PublishAMI(ec2 *EC2, ssm *SSM, alias, k8s string, created time.Time) map[string]string {
	parsed, err := awsv1.ParseAlias(alias)
	if err != nil {
		panic(err)
	}
	minor, err := version.Minor(k8s)
	if err != nil {
		panic(err)
	}
	params, err := ami.AliasParameters(parsed, k8s, minor)
	if err != nil {
		panic(err)
	}
	out := map[string]string{}
	for _, param := range params {
		id := AMIImageID(param.Path, created)
		arch := ec2types.ArchitectureValuesX8664
		if strings.Contains(param.Path, "arm64") {
			arch = ec2types.ArchitectureValuesArm64
		}
		name := strings.ToLower(parsed.Family) + "-" + strings.Trim(strings.ReplaceAll(strings.TrimPrefix(param.Path, "/aws/service/"), "/", "-"), "-") + "-" + created.UTC().Format("20060102")
		img := NewImage(id, name, arch, created, nil)
		img.OwnerId = ptr("602401143452")
		img.ImageOwnerAlias = ptr("amazon")
		ec2.AddImages(img)
		ssm.PutParameter(param.Path, id)
		out[param.Path] = id
	}
	return out
}

// AMIImageID is the deterministic ID PublishAMI gives the image of param
// released at created.
func AMIImageID(param string, created time.Time) string {
	sum := sha256.Sum256([]byte(param + "@" + created.UTC().Format(time.RFC3339)))
	return "ami-" + hex.EncodeToString(sum[:])[:17]
}
