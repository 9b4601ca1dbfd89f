package v1_test

import (
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

const pgPath = "spec.placementGroupSelector"

func placementGroup(sel awsv1.PlacementGroupSelector) func(*awsv1.EC2NodeClass) {
	return func(nc *awsv1.EC2NodeClass) { nc.Spec.PlacementGroupSelector = &sel }
}

// placementGroupSelector takes exactly one of a non-empty name or a pg-
// ID, with upstream v1.14's messages (aws/karpenter-provider-aws
// 1d927085d, pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml).
func TestPlacementGroupSelectorValidation(t *testing.T) {
	expectRejected(t, map[string]tc{
		"empty selector":    {raw: set(map[string]interface{}{}, "spec", "placementGroupSelector"), want: []string{pgPath, "expected at least one, got none, ['name', 'id']"}},
		"name and id":       {edit: placementGroup(awsv1.PlacementGroupSelector{Name: ptr.To("a"), ID: ptr.To("pg-0123")}), want: []string{pgPath, "'name' and 'id' are mutually exclusive"}},
		"empty name":        {edit: placementGroup(awsv1.PlacementGroupSelector{Name: ptr.To("")}), want: []string{pgPath + ".name", "should be at least 1 chars long"}},
		"malformed id":      {edit: placementGroup(awsv1.PlacementGroupSelector{ID: ptr.To("pg_0123")}), want: []string{pgPath + ".id", "should match '^pg-[0-9a-z]+$'"}},
		"upper-case id":     {edit: placementGroup(awsv1.PlacementGroupSelector{ID: ptr.To("pg-0ABC")}), want: []string{pgPath + ".id", "should match"}},
		"id without prefix": {edit: placementGroup(awsv1.PlacementGroupSelector{ID: ptr.To("0123")}), want: []string{pgPath + ".id", "should match"}},
	})
	expectAccepted(t, map[string]tc{
		"by name": {edit: placementGroup(awsv1.PlacementGroupSelector{Name: ptr.To("ml-training-pg")})},
		"by id":   {edit: placementGroup(awsv1.PlacementGroupSelector{ID: ptr.To("pg-0123456789abcdef0")})},
	}, func(t *testing.T, stored *awsv1.EC2NodeClass) {
		if stored.Spec.PlacementGroupSelector == nil {
			t.Error("placementGroupSelector was pruned")
		}
	})
}

// The selector is part of the drift hash, as upstream: choosing, changing
// or dropping a group drifts the class's nodes (NodeClassDrift); the
// resolved status is not hashed. (TestHashGolden pins that a class without
// a selector keeps its hash.)
func TestPlacementGroupSelectorHash(t *testing.T) {
	base := validNodeClass()
	byName := base.DeepCopy()
	byName.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("a")}
	other := base.DeepCopy()
	other.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr.To("b")}
	byID := base.DeepCopy()
	byID.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{ID: ptr.To("pg-0a1")}
	hashes := map[string]string{"none": base.Hash(), "name a": byName.Hash(), "name b": other.Hash(), "id": byID.Hash()}
	seen := map[string]string{}
	for name, h := range hashes {
		if prev, ok := seen[h]; ok {
			t.Errorf("%s and %s hash alike (%s)", name, prev, h)
		}
		seen[h] = name
	}
	resolved := base.DeepCopy()
	resolved.Status.PlacementGroup = &awsv1.PlacementGroup{ID: "pg-0a1", Name: "a", Strategy: awsv1.PlacementGroupStrategyCluster}
	if resolved.Hash() != base.Hash() {
		t.Error("the resolved status changed the spec hash")
	}
}
