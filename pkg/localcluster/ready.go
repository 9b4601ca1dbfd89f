package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/apis/crds"
)

// pollInterval is how often readiness conditions are re-checked.
const pollInterval = 200 * time.Millisecond

// poll calls check until it reports done, a component dies, or ctx ends.
// On timeout the error names what was awaited and the last failure.
func (c *Cluster) poll(ctx context.Context, what string, check func(context.Context) (bool, error)) error {
	fmt.Fprintf(c.opts.Progress, "waiting for %s\n", what)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var last error
	for {
		done, err := check(ctx)
		if done {
			return nil
		}
		last = err
		select {
		case err := <-c.died:
			// Put it back so Died() still reports it to the caller.
			select {
			case c.died <- err:
			default:
			}
			return fmt.Errorf("waiting for %s: %w", what, err)
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("timed out waiting for %s (last error: %w); logs in %s", what, last, c.layout.logDir())
		case <-tick.C:
		}
	}
}

func (c *Cluster) waitAPIServer(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("building clientset: %w", err)
	}
	return c.poll(ctx, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, body)
		}
		return true, nil
	})
}

// adminClient returns a controller-runtime client knowing the built-in
// types and CRDs.
func (c *Cluster) adminClient() (client.Client, error) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building client: %w", err)
	}
	return cl, nil
}

// installCRDs creates (or updates) the karp CRDs and waits until each is
// Established and its names are accepted.
func (c *Cluster) installCRDs(ctx context.Context) error {
	all, err := crds.All()
	if err != nil {
		return fmt.Errorf("loading karp CRDs: %w", err)
	}
	cl, err := c.adminClient()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.opts.Progress, "installing %d CRDs\n", len(all))
	for _, crd := range all {
		if err := createOrUpdate(ctx, cl, crd); err != nil {
			return err
		}
	}
	for _, crd := range all {
		err := c.poll(ctx, "CRD "+crd.Name+" Established", func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := cl.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, err
			}
			return crdEstablished(got), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func createOrUpdate(ctx context.Context, cl client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	err := cl.Create(ctx, crd.DeepCopy())
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		return nil
	}
	existing := &apiextensionsv1.CustomResourceDefinition{}
	if err := cl.Get(ctx, client.ObjectKey{Name: crd.Name}, existing); err != nil {
		return fmt.Errorf("getting CRD %s: %w", crd.Name, err)
	}
	updated := crd.DeepCopy()
	updated.ResourceVersion = existing.ResourceVersion
	if err := cl.Update(ctx, updated); err != nil {
		return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
	}
	return nil
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	established, accepted := false, false
	for _, cond := range crd.Status.Conditions {
		switch cond.Type {
		case apiextensionsv1.Established:
			established = cond.Status == apiextensionsv1.ConditionTrue
		case apiextensionsv1.NamesAccepted:
			accepted = cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return established && accepted
}

// waitComponents waits for the scheduler, controller-manager and kwok to
// report healthy and for the default ServiceAccount to exist.
func (c *Cluster) waitComponents(ctx context.Context) error {
	for _, name := range []string{Scheduler, ControllerManager, KWOK} {
		if err := c.waitHealthz(ctx, name); err != nil {
			return err
		}
	}
	cl, err := c.adminClient()
	if err != nil {
		return err
	}
	return c.poll(ctx, "the default ServiceAccount", func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, err
	})
}

// waitHealthz waits until the scheduler, controller-manager or kwok
// answers /healthz.
func (c *Cluster) waitHealthz(ctx context.Context, component string) error {
	// The scheduler and controller-manager serve /healthz with a
	// self-signed certificate generated at start; only health is read, on
	// loopback, so the certificate is not verified.
	insecure := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe of a self-signed endpoint
	}
	urls := map[string]string{
		Scheduler:         "https://" + hostPort(c.Ports.Scheduler) + "/healthz",
		ControllerManager: "https://" + hostPort(c.Ports.ControllerManager) + "/healthz",
		KWOK:              "http://" + hostPort(c.Ports.KWOK) + "/healthz",
	}
	url, ok := urls[component]
	if !ok {
		return fmt.Errorf("no health endpoint known for %s", component)
	}
	return c.poll(ctx, component+" /healthz", func(ctx context.Context) (bool, error) {
		return httpOK(ctx, insecure, url)
	})
}

func httpOK(ctx context.Context, hc *http.Client, url string) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, errors.New(resp.Status)
	}
	return true, nil
}
