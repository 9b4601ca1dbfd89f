package v1_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

var nameSeq atomic.Int64

// validNodeClass is the smallest EC2NodeClass the API server accepts: an
// alias, a role and wildcard subnet and security group selectors. Each
// case mutates a fresh copy.
func validNodeClass() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-test",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	nc.SetGroupVersionKind(awsv1.SchemeGroupVersion.WithKind(awsv1.Kind))
	nc.Name = fmt.Sprintf("nc-%d", nameSeq.Add(1))
	return nc
}

// tc is one EC2NodeClass sent to the API server: the typed mutation, then
// an optional mutation of its unstructured form for what Go types cannot
// hold (a null list, a wrong JSON type).
type tc struct {
	edit func(*awsv1.EC2NodeClass)
	raw  func(map[string]interface{})
	// want are substrings the rejection must contain: the offending field
	// path first, then the rule's message.
	want []string
}

func (c tc) object(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	nc := validNodeClass()
	if c.edit != nil {
		c.edit(nc)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
	if err != nil {
		t.Fatalf("converting: %v", err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if c.raw != nil {
		c.raw(u.Object)
	}
	return u
}

// expectRejected creates each case and checks the API server refuses it as
// Invalid with every wanted substring in the message.
func expectRejected(t *testing.T, cases map[string]tc) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if len(c.want) == 0 {
				t.Fatal("a rejection case must name the field it expects")
			}
			u := c.object(t)
			err := kubeClient.Create(t.Context(), u)
			if err == nil {
				_ = kubeClient.Delete(t.Context(), u)
				t.Fatalf("created %s, want it rejected with %q", u.GetName(), c.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}

// expectAccepted creates each case, returns what the API server stored
// (defaults applied) to check, and deletes it.
func expectAccepted(t *testing.T, cases map[string]tc, check func(t *testing.T, stored *awsv1.EC2NodeClass)) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			u := c.object(t)
			ctx := t.Context()
			if err := kubeClient.Create(ctx, u); err != nil {
				t.Fatalf("creating: %v", err)
			}
			t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })
			if check == nil {
				return
			}
			stored := &awsv1.EC2NodeClass{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, stored); err != nil {
				t.Fatalf("decoding the stored object: %v", err)
			}
			check(t, stored)
		})
	}
}

// set returns a mutation writing value at the given path.
func set(value interface{}, path ...string) func(map[string]interface{}) {
	return func(u map[string]interface{}) {
		if err := unstructured.SetNestedField(u, value, path...); err != nil {
			panic(err)
		}
	}
}
