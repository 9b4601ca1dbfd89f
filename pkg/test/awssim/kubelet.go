package awssim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// KubeletOptions configure the simulated kubelets.
type KubeletOptions struct {
	// RegistrationDelay is how long after launch an instance's Node
	// registers (boot and kubelet start); default 2s.
	RegistrationDelay time.Duration
	// Interval is how often the instances are looked at; default 250ms.
	Interval time.Duration
}

// Kubelet plays the kubelet of every instance the Sim runs: once an
// instance has been running for the registration delay it creates the
// instance's Node as a kubelet booted from its user data would (see
// launch.node), managed by kwok from then on; when the instance shuts
// down or terminates it deletes the Node, as the cloud node lifecycle
// controller does. An instance whose user data no AMI would understand
// never registers (logged once).
type Kubelet struct {
	sim        *Sim
	kubeClient client.Client
	opts       KubeletOptions
	clock      clock.Clock

	mu sync.Mutex
	// booted holds, per instance ID, the launch it booted from (captured
	// while its launch template exists) and whether its Node was created.
	booted map[string]*bootState
}

type bootState struct {
	launch     *launch
	nodeName   string
	boot       bootConfig
	failed     bool
	registered bool
	deleted    bool
}

// NewKubelet returns the kubelets of the Sim's instances, registering
// Nodes through kubeClient.
func (s *Sim) NewKubelet(kubeClient client.Client, opts KubeletOptions) *Kubelet {
	if opts.RegistrationDelay == 0 {
		opts.RegistrationDelay = 2 * time.Second
	}
	if opts.Interval == 0 {
		opts.Interval = 250 * time.Millisecond
	}
	return &Kubelet{sim: s, kubeClient: kubeClient, opts: opts, clock: s.opts.Clock, booted: map[string]*bootState{}}
}

// Run syncs Nodes with instances until ctx ends.
func (k *Kubelet) Run(ctx context.Context) error {
	for {
		k.Sync(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-k.clock.After(k.opts.Interval):
		}
	}
}

// Sync registers the Nodes of instances running for the registration
// delay and removes those of instances gone; errors are logged and the
// next Sync retries.
func (k *Kubelet) Sync(ctx context.Context) {
	logger := log.FromContext(ctx).WithName("awssim.kubelet")
	now := k.clock.Now()
	for _, inst := range k.sim.EC2.Instances() {
		id := aws.ToString(inst.InstanceId)
		switch inst.State.Name {
		case ec2types.InstanceStateNamePending, ec2types.InstanceStateNameRunning:
			state := k.state(ctx, inst)
			if state.failed || state.registered || now.Before(aws.ToTime(inst.LaunchTime).Add(k.opts.RegistrationDelay)) {
				continue
			}
			node := state.launch.node(state.boot)
			if err := k.register(ctx, node); err != nil {
				logger.Error(err, "registering node", "instance", id, "Node", node.Name)
				continue
			}
			state.registered, state.nodeName = true, node.Name
			logger.V(1).Info("registered node", "instance", id, "Node", node.Name)
		default:
			// shutting-down, terminated, stopping, stopped: the node is gone.
			state := k.known(id)
			if state == nil || !state.registered || state.deleted {
				continue
			}
			name := state.nodeName
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := k.kubeClient.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
				logger.Error(err, "removing the node of a stopped instance", "instance", id, "Node", name)
				continue
			}
			state.deleted = true
		}
	}
}

// register creates the Node; one already there counts only if it is this
// instance's (a retry), not another machine's of the same name.
func (k *Kubelet) register(ctx context.Context, node *corev1.Node) error {
	err := k.kubeClient.Create(ctx, node)
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	have := &corev1.Node{}
	if err := k.kubeClient.Get(ctx, client.ObjectKeyFromObject(node), have); err != nil {
		return err
	}
	if have.Spec.ProviderID != node.Spec.ProviderID {
		return fmt.Errorf("node %s exists with providerID %s, not %s", node.Name, have.Spec.ProviderID, node.Spec.ProviderID)
	}
	return nil
}

// known returns the instance's state if the kubelet has seen it running.
func (k *Kubelet) known(id string) *bootState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.booted[id]
}

// state returns what the instance booted from, reading its launch template
// the first time the instance is seen.
func (k *Kubelet) state(ctx context.Context, inst ec2types.Instance) *bootState {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := aws.ToString(inst.InstanceId)
	if s, ok := k.booted[id]; ok {
		return s
	}
	s := &bootState{}
	k.booted[id] = s
	l, err := k.sim.launchOf(inst)
	if err == nil {
		s.launch = l
		s.boot, err = parseUserData(l.userData)
	}
	if err != nil {
		s.failed = true
		log.FromContext(ctx).Info("instance will not join the cluster", "instance", id, "reason", err.Error())
	}
	return s
}

// launchOf finds the launch template the instance was launched from (the
// CreateFleet request with its client token and an override of its type
// and zone) and its type's description.
func (s *Sim) launchOf(inst ec2types.Instance) (*launch, error) {
	zone := aws.ToString(inst.Placement.AvailabilityZone)
	templateName := ""
	for _, in := range s.EC2.CreateFleetInputs() {
		if aws.ToString(in.ClientToken) != aws.ToString(inst.ClientToken) {
			continue
		}
		for _, cfg := range in.LaunchTemplateConfigs {
			for _, o := range cfg.Overrides {
				if o.InstanceType == inst.InstanceType && (aws.ToString(o.AvailabilityZone) == zone || aws.ToString(o.SubnetId) == aws.ToString(inst.SubnetId)) {
					templateName = aws.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName)
				}
			}
		}
	}
	if templateName == "" {
		return nil, fmt.Errorf("no CreateFleet request launched instance %s", aws.ToString(inst.InstanceId))
	}
	data, ok := s.EC2.LaunchTemplateData(templateName)
	if !ok {
		return nil, fmt.Errorf("launch template %s is gone", templateName)
	}
	info, ok := s.types[string(inst.InstanceType)]
	if !ok {
		return nil, fmt.Errorf("instance type %s is not in the catalog", inst.InstanceType)
	}
	l := &launch{instance: inst, info: info, userData: aws.ToString(data.UserData), region: s.opts.Region,
		k8sVersion: s.opts.KubernetesVersion, network: s.network}
	for _, ni := range data.NetworkInterfaces {
		// The EFA device plugin advertises each EFA device the instance
		// was launched with: an efa interface (ENA and EFA) or an
		// efa-only one.
		switch aws.ToString(ni.InterfaceType) {
		case string(ec2types.NetworkInterfaceTypeEfa), string(ec2types.NetworkInterfaceTypeEfaOnly):
			l.efa++
		}
	}
	for _, bdm := range data.BlockDeviceMappings {
		if bdm.Ebs == nil || bdm.Ebs.VolumeSize == nil {
			continue
		}
		size := resource.MustParse(fmt.Sprintf("%dGi", *bdm.Ebs.VolumeSize))
		// The kubelet's volume: the root one on Amazon Linux, the data
		// one on Bottlerocket; the larger when both are given.
		if l.rootVolume == nil || size.Cmp(*l.rootVolume) > 0 {
			l.rootVolume = &size
		}
	}
	return l, nil
}
