package fake

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// SSM is a stateful fake of the SSM Parameter Store calls the provider makes
// (GetParameter, GetParameters). Tests publish parameters with
// PutParameter, for example a newer AMI ID under an EKS-optimized alias
// path, exactly as AWS publishes a new release.
type SSM struct {
	Faults

	mu     sync.Mutex
	params map[string]ssmtypes.Parameter
}

// NewSSM returns a fake with no parameters.
func NewSSM() *SSM {
	return &SSM{params: map[string]ssmtypes.Parameter{}}
}

// PutParameter sets a String parameter's value, bumping its version when it
// already exists.
func (s *SSM) PutParameter(name, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	version := s.params[name].Version + 1
	s.params[name] = ssmtypes.Parameter{
		Name:     ptr(name),
		Value:    ptr(value),
		Type:     ssmtypes.ParameterTypeString,
		DataType: ptr("text"),
		Version:  version,
		ARN:      ptr(fmt.Sprintf("arn:aws:ssm:us-west-2:%s:parameter%s", AccountID, name)),
	}
}

// DeleteParameter removes a parameter; it reports whether it existed.
func (s *SSM) DeleteParameter(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.params[name]
	delete(s.params, name)
	return ok
}

// GetParameter returns the parameter named by name or ARN, or
// ParameterNotFound.
func (s *SSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if err := s.enter("GetParameter"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.params[parameterName(deref(in.Name))]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{}
	}
	return &ssm.GetParameterOutput{Parameter: &p}, nil
}

// GetParameters returns the named parameters that exist and lists the
// others as InvalidParameters; more than 10 names is a ValidationException,
// as in SSM.
func (s *SSM) GetParameters(_ context.Context, in *ssm.GetParametersInput, _ ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	if err := s.enter("GetParameters"); err != nil {
		return nil, err
	}
	if len(in.Names) == 0 || len(in.Names) > 10 {
		return nil, APIError("ValidationException", fmt.Sprintf("1 validation error detected: Value at 'names' failed to satisfy constraint: Member must have length less than or equal to 10 and greater than or equal to 1 (got %d)", len(in.Names)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &ssm.GetParametersOutput{}
	for _, name := range in.Names {
		if p, ok := s.params[parameterName(name)]; ok {
			if !slices.ContainsFunc(out.Parameters, func(have ssmtypes.Parameter) bool { return deref(have.Name) == name }) {
				out.Parameters = append(out.Parameters, p)
			}
			continue
		}
		if !slices.Contains(out.InvalidParameters, name) {
			out.InvalidParameters = append(out.InvalidParameters, name)
		}
	}
	return out, nil
}

// parameterName is the name an ARN (arn:aws:ssm:<region>:<account>:parameter/<name>)
// refers to; a name is returned as is.
func parameterName(nameOrARN string) string {
	if !strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	_, name, ok := strings.Cut(nameOrARN, ":parameter")
	if !ok {
		return nameOrARN
	}
	return name
}
