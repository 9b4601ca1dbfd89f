package localcluster

import kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"

// KWOKNodeAnnotationKey and KWOKNodeAnnotationValue mark a Node as one kwok
// simulates. kwok runs with --manage-nodes-with-annotation-selector set to
// this pair, so it leaves every other Node alone; the kwok cloud provider
// sets the annotation on the Nodes it creates. The pair is defined with
// the kwok provider's API, which both share.
const (
	KWOKNodeAnnotationKey   = kwokv1alpha1.KWOKNodeAnnotationKey
	KWOKNodeAnnotationValue = kwokv1alpha1.KWOKNodeAnnotationValue
)

// KWOKReadyAnnotationKey, set to KWOKNotReadyValue on a Running Pod of a
// managed Node, makes kwok report the Pod not Ready until the annotation is
// removed.
//
// KWOKReadyAnnotationKey, set to KWOKNotReadyValue on a managed Node, makes
// kwok report the Node not Ready and keep it so: the node-not-ready stage
// sets its Ready condition to False (reason KWOKNotReadyReason), and the
// node-ready and node-heartbeat stages skip it, so nothing flips it back.
// kwok keeps renewing the Node's lease, so the node lifecycle controller
// leaves the condition False (not Unknown) and taints the Node not-ready,
// as for a kubelet reporting itself unhealthy. Removing the annotation (or
// setting any other value) lets node-ready make the Node Ready again.
//
//	kubectl annotate node NODE karp.sh/kwok-ready=false     # unhealthy
//	kubectl annotate node NODE karp.sh/kwok-ready-          # healthy again
const (
	KWOKReadyAnnotationKey = "karp.sh/kwok-ready"
	KWOKNotReadyValue      = "false"
	// KWOKNotReadyReason is the Ready condition's reason on such a Node.
	KWOKNotReadyReason = "KWOKNotReady"
)

// KWOKStageLabelKey set to KWOKStageUnhealthy is how specs written for
// upstream Karpenter's kind + kwok environment ask for an unhealthy object,
// and the local cluster honours it beside its own annotation:
//   - on a Pod of a managed Node, the Pod runs but is never Ready (Ready
//     and ContainersReady False from the start, reason KWOKNotReady), so a
//     PodDisruptionBudget never counts it healthy;
//   - on a managed Node, kwok leaves the Node's conditions alone (no stage
//     plays on it, and the resync does not touch it), so a test can write
//     a condition (Ready=False, a repair signal) and it stays as written.
//
// Removing the label lets the usual stages make the object Ready again.
const (
	KWOKStageLabelKey  = "kwok.x-k8s.io/stage"
	KWOKStageUnhealthy = "unhealthy"
)

// KWOKPodDeleteDelayAnnotationKey on a Pod sets how long kwok keeps it
// Terminating once deleted, as a Go duration ("90s"); it is the annotation
// upstream's kwok stages read. Without it, a deleted Pod with a preStop
// hook stays until its grace period ends (its deletion timestamp) and any
// other Pod is removed at once, as a kubelet does when the containers exit
// on SIGTERM.
const KWOKPodDeleteDelayAnnotationKey = "pod-delete.stage.kwok.x-k8s.io/delay"

// KWOKPodCompleteDelayAnnotationKey on a Pod of a Job sets how long it
// runs before kwok completes it (Succeeded), as a Go duration ("45s"); the
// annotation upstream's kwok pod-complete stage reads.
const KWOKPodCompleteDelayAnnotationKey = "pod-complete.stage.kwok.x-k8s.io/delay"

// KWOKPodReadyDelayAnnotationKey on a Pod sets how long a bound Pod stays
// Pending before kwok starts it Running and Ready, as a Go duration
// ("5s"): a workload whose pods take seconds to become Ready. It is the annotation upstream's
// kwok pod-ready stage reads.
const KWOKPodReadyDelayAnnotationKey = "pod-ready.stage.kwok.x-k8s.io/delay"

// kwokStages is the configuration kwok runs with: the stages that move
// managed Nodes and their Pods through a lifecycle. kwok has no built-in
// stages when run as a plain binary, so without these nothing would turn
// Ready.
//
//   - node-ready: a managed Node whose Ready condition is not True gets the
//     standard conditions (Ready=True), nodeInfo and, when the creator
//     set none, a Hostname address (its name) and a default capacity;
//     phase Running.
//   - node-heartbeat: refreshes the conditions' heartbeat every five
//     minutes or so. Liveness comes from the Node lease kwok renews
//     (--node-lease-duration-seconds), which the node lifecycle controller
//     reads, so frequent status writes would only load the API server.
//   - node-not-ready: a managed Node annotated karp.sh/kwok-ready=false
//     whose Ready condition is not False gets Ready=False; node-ready and
//     node-heartbeat exclude such Nodes (see KWOKReadyAnnotationKey).
//     No node stage plays on a Node labelled kwok.x-k8s.io/stage=unhealthy
//     (see KWOKStageLabelKey).
//   - pod-running: a Pending Pod bound to a managed Node becomes Running and
//     Ready with an IP (not Ready when labelled kwok.x-k8s.io/stage=unhealthy),
//     at once or after the delay its pod-ready.stage.kwok.x-k8s.io/delay
//     annotation gives (see KWOKPodReadyDelayAnnotationKey).
//   - pod-not-ready, pod-stage-unhealthy: a Running Pod annotated
//     karp.sh/kwok-ready=false, or labelled kwok.x-k8s.io/stage=unhealthy,
//     reports Ready=False (reason KWOKNotReady, ContainersReady=False too),
//     so a PodDisruptionBudget counts it unhealthy (see
//     KWOKReadyAnnotationKey).
//   - pod-ready-again: a Running Pod not so annotated whose Ready
//     condition is False is made Ready again within ten seconds or so. That
//     covers the annotation being removed, and what the node lifecycle
//     controller leaves when it marks the pods of a node not ready (their
//     node's lease went stale, say across a kwok or kube-apiserver
//     restart: Ready=False, ContainersReady left True). A kubelet's status
//     manager finds the stored status differs from its own and writes its
//     own back on its next sync (every ten seconds), so the pods of a node
//     whose kubelet runs are Ready again; kwok is that kubelet here, and
//     resyncs as long as it runs, whether or not the Node is annotated
//     karp.sh/kwok-ready=false (a kubelet reporting its node not Ready
//     still runs).
//   - pod-succeeded: a Running Pod owned by a Job completes, at once or
//     after the delay its pod-complete.stage.kwok.x-k8s.io/delay annotation
//     gives (see KWOKPodCompleteDelayAnnotationKey).
//   - pod-remove: a Pod being deleted is removed, as a kubelet would: at
//     once, or when its deletion timestamp (the end of its grace period)
//     comes if it has a preStop hook, or after the delay its
//     pod-delete.stage.kwok.x-k8s.io/delay annotation gives (see
//     KWOKPodDeleteDelayAnnotationKey).
//
// kwok plays a stage only on a watch event and gives up on a write the API
// server refuses with an error it does not take for transient; the
// cluster's resync (kwokresync.go) touches what it left behind, as a
// kubelet's periodic sync would.
const kwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
    - key: '.metadata.annotations["karp.sh/kwok-ready"]'
      operator: NotIn
      values: ['false']
    - key: '.metadata.labels["kwok.x-k8s.io/stage"]'
      operator: NotIn
      values: [unhealthy]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      addresses:
      {{ with .status.addresses }}
      {{ YAML . 1 }}
      {{ else }}
      {{ with NodeIP }}
      - {type: InternalIP, address: {{ . | Quote }}}
      {{ end }}
      - {type: Hostname, address: {{ .metadata.name | Quote }}}
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: "32"
        memory: 256Gi
        pods: "110"
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        cpu: "32"
        memory: 256Gi
        pods: "110"
      {{ end }}
      {{ $info := .status.nodeInfo }}
      {{ $kwok := printf "kwok-%s" Version }}
      nodeInfo:
        architecture: {{ or $info.architecture "amd64" }}
        operatingSystem: {{ or $info.operatingSystem "linux" }}
        kubeletVersion: {{ or $info.kubeletVersion $kwok }}
        kubeProxyVersion: {{ or $info.kubeProxyVersion $kwok }}
        containerRuntimeVersion: {{ or $info.containerRuntimeVersion $kwok }}
        kernelVersion: {{ or $info.kernelVersion $kwok }}
        osImage: {{ or $info.osImage "karp-kwok" | Quote }}
        machineID: {{ or $info.machineID "" | Quote }}
        systemUUID: {{ or $info.systemUUID "" | Quote }}
        bootID: {{ or $info.bootID "" | Quote }}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['True']
    - key: '.metadata.annotations["karp.sh/kwok-ready"]'
      operator: NotIn
      values: ['false']
    - key: '.metadata.labels["kwok.x-k8s.io/stage"]'
      operator: NotIn
      values: [unhealthy]
  delay:
    durationMilliseconds: 300000
    jitterDurationMilliseconds: 330000
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $created := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $created | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-not-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchAnnotations:
      karp.sh/kwok-ready: 'false'
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['False']
    - key: '.metadata.labels["kwok.x-k8s.io/stage"]'
      operator: NotIn
      values: [unhealthy]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      {{ if eq .type "Ready" }}
      - type: Ready
        status: "False"
        reason: KWOKNotReady
        message: "karp.sh/kwok-ready=false: kwok reports the node not ready"
      {{ else }}
      - type: {{ .type | Quote }}
        status: {{ .status | Quote }}
        reason: {{ .reason | Quote }}
        message: {{ .message | Quote }}
      {{ end }}
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Pending]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-ready.stage.kwok.x-k8s.io/delay"] // "0s"'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $ready := "True" }}
      {{ with .metadata.labels }}{{ if eq (printf "%v" (index . "kwok.x-k8s.io/stage")) "unhealthy" }}{{ $ready = "False" }}{{ end }}{{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
      conditions:
      {{ range list "PodScheduled" "Initialized" }}
      - type: {{ . }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      {{ range list "ContainersReady" "Ready" }}
      - type: {{ . }}
        status: {{ $ready | Quote }}
        {{ if eq $ready "False" }}reason: KWOKNotReady{{ end }}
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: {{ eq $ready "True" }}
        started: true
        restartCount: 0
        state: {running: {startedAt: {{ $now | Quote }}}}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: true
        restartCount: 0
        {{ if eq .restartPolicy "Always" }}
        started: true
        state: {running: {startedAt: {{ $now | Quote }}}}
        {{ else }}
        state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}
        {{ end }}
      {{ end }}
      {{ with NodeIPsWith .spec.nodeName }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-not-ready
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchAnnotations:
      karp.sh/kwok-ready: 'false'
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['False']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range list "PodScheduled" "Initialized" }}
      - type: {{ . }}
        status: "True"
      {{ end }}
      {{ range list "ContainersReady" "Ready" }}
      - type: {{ . }}
        status: "False"
        reason: KWOKNotReady
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-stage-unhealthy
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchLabels:
      kwok.x-k8s.io/stage: unhealthy
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['False']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range list "PodScheduled" "Initialized" }}
      - type: {{ . }}
        status: "True"
      {{ end }}
      {{ range list "ContainersReady" "Ready" }}
      - type: {{ . }}
        status: "False"
        reason: KWOKNotReady
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.metadata.annotations["karp.sh/kwok-ready"]'
      operator: NotIn
      values: ['false']
    - key: '.metadata.labels["kwok.x-k8s.io/stage"]'
      operator: NotIn
      values: [unhealthy]
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['False']
  delay:
    durationMilliseconds: 1000
    jitterDurationMilliseconds: 10000
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range list "PodScheduled" "Initialized" "ContainersReady" "Ready" }}
      - type: {{ . }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-succeeded
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: [Job]
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["pod-complete.stage.kwok.x-k8s.io/delay"] // "0s"'
  next:
    statusTemplate: |
      {{ $now := Now }}
      phase: Succeeded
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: false
        started: false
        restartCount: 0
        state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-remove
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: >-
        .metadata.annotations["pod-delete.stage.kwok.x-k8s.io/delay"] //
        (if ([.spec.containers[]? | select(.lifecycle.preStop != null)] | length) > 0
        then .metadata.deletionTimestamp else "0s" end)
  next:
    delete: true
`
