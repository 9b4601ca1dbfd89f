package localcluster_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
)

// TestComponentFaults runs the fault primitives on one cluster, in order:
// a paused API server answers nothing until resumed; a restarted API
// server serves again under a new pid; a restarted etcd keeps the objects;
// the scheduler and controller-manager come back. No deliberate restart is
// reported on Died, while a component that dies afterwards still is.
func TestComponentFaults(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "survives-restarts"},
		Data:       map[string]string{"k": "v"},
	}
	if err := cl.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	t.Run("KubeconfigFor authenticates a new user with full rights", func(t *testing.T) {
		path, err := c.KubeconfigFor("replica-a")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := review.Status.UserInfo; got.Username != "replica-a" || !slices.Contains(got.Groups, "system:masters") {
			t.Errorf("authenticated as %s in %v, want replica-a in system:masters", got.Username, got.Groups)
		}
		if _, err := c.KubeconfigFor("../escape"); err == nil {
			t.Error("KubeconfigFor accepted a user name with a path separator")
		}
	})

	t.Run("SIGSTOP freezes the API server until SIGCONT", func(t *testing.T) {
		short := rest.CopyConfig(c.Config)
		short.Timeout = 2 * time.Second
		shortCl, err := client.New(short, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Signal(localcluster.APIServer, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		err = shortCl.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		if err := c.Signal(localcluster.APIServer, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if err == nil {
			t.Fatal("a request to the stopped API server succeeded")
		}
		eventually(t, func() error { return cl.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) })
	})

	for _, component := range []string{localcluster.APIServer, localcluster.Etcd, localcluster.Scheduler, localcluster.ControllerManager, localcluster.KWOK} {
		t.Run("restart "+component, func(t *testing.T) {
			before, err := c.PID(component)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Restart(ctx, component); err != nil {
				t.Fatalf("restarting %s: %v", component, err)
			}
			after, err := c.PID(component)
			if err != nil {
				t.Fatal(err)
			}
			if after == before {
				t.Errorf("%s pid %d unchanged by Restart", component, after)
			}
			if localcluster.ProcessAlive(before) {
				t.Errorf("the old %s (pid %d) still runs", component, before)
			}
			recorded := 0
			for _, r := range c.State().Components {
				if r.Name == component {
					recorded++
					if r.PID != after || !r.Alive() {
						t.Errorf("state records %s as pid %d (alive %v), want the running pid %d", component, r.PID, r.Alive(), after)
					}
				}
			}
			if recorded != 1 {
				t.Errorf("state records %d processes for %s, want 1", recorded, component)
			}
			state, err := localcluster.ReadState(c.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range state.Components {
				if r.Name == component && r.PID != after {
					t.Errorf("state file records %s as pid %d, want %d", component, r.PID, after)
				}
			}
			// The cluster serves, and the object written before every
			// restart is still there, unchanged.
			got := &corev1.ConfigMap{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
				t.Fatalf("after restarting %s: %v", component, err)
			}
			if got.UID != cm.UID || got.Data["k"] != "v" {
				t.Errorf("after restarting %s the ConfigMap is uid %s data %v, want uid %s data k=v", component, got.UID, got.Data, cm.UID)
			}
			// Objects can still be written.
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "after-restart-"}}
			if err := cl.Create(ctx, probe); err != nil {
				t.Fatalf("creating after restarting %s: %v", component, err)
			}
		})
	}

	select {
	case err := <-c.Died():
		t.Fatalf("Died() reported a deliberate restart: %v", err)
	case <-time.After(2 * time.Second):
	}

	// A death nobody asked for is still reported, for the restarted
	// process as well.
	pid, err := c.PID(localcluster.Scheduler)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Signal(localcluster.Scheduler, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.Died():
		if !strings.Contains(err.Error(), localcluster.Scheduler) {
			t.Errorf("Died() = %v, want the scheduler (pid %d)", err, pid)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the killed scheduler was not reported on Died()")
	}
	if err := c.Restart(ctx, localcluster.Scheduler); err == nil {
		t.Error("Restart of a component that died unexpectedly succeeded; want an error carrying its exit")
	}
}

func TestRestartRejectsUnknownComponent(t *testing.T) {
	c := &localcluster.Cluster{}
	err := c.Restart(t.Context(), "kubelet")
	if err == nil || !strings.Contains(err.Error(), "kubelet") || !strings.Contains(err.Error(), localcluster.APIServer) {
		t.Fatalf("Restart(kubelet) = %v, want an error naming kubelet and the components", err)
	}
	if err := c.Signal("kubelet", syscall.SIGSTOP); err == nil || !strings.Contains(err.Error(), "kubelet") {
		t.Fatalf("Signal(kubelet) = %v, want an error naming kubelet", err)
	}
}

// eventually retries f for up to a minute.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("still failing after a minute: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
