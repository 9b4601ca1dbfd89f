package manifest

import (
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
)

// jobs create the pods each Job runs at once: parallelism (default 1), or
// completions when smaller; none for a suspended Job. Indexed Jobs name
// their pods <job>-<index>-<suffix>, others <job>-<suffix>.
func (e *expander) jobs() error {
	for _, job := range e.set.Jobs {
		if job.Spec.Suspend != nil && *job.Spec.Suspend {
			continue
		}
		ensureUID("Job", job)
		key := objectKey("Job", job.Namespace, job.Name)
		want := 1
		if job.Spec.Parallelism != nil {
			want = int(max(*job.Spec.Parallelism, 0))
		}
		if job.Spec.Completions != nil && int(*job.Spec.Completions) < want {
			want = int(max(*job.Spec.Completions, 0))
		}
		missing := want - len(e.owned[key])
		if missing <= 0 {
			continue
		}
		indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
		ref := controllerRef("batch/v1", "Job", job.Name, job)
		for i, sfx := range suffixes(key, missing) {
			name := job.Name + "-" + sfx
			if indexed {
				name = fmt.Sprintf("%s-%d-%s", job.Name, i, sfx)
			}
			pod := e.newPod(&job.Spec.Template, job.Namespace, name, ref)
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			uid := string(job.UID)
			pod.Labels[batchv1.JobNameLabel] = job.Name
			pod.Labels[legacyJobNameLabel] = job.Name
			pod.Labels[batchv1.ControllerUidLabel] = uid
			pod.Labels[legacyControllerUIDLabel] = uid
			if indexed {
				pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(i)
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(i)
			}
			e.out.Pending = append(e.out.Pending, pod)
		}
	}
	return nil
}

// The Job controller still sets the unprefixed labels next to the
// batch.kubernetes.io ones.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)
