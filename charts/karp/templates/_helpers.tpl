{{/* The chart name, truncated to 63 characters. */}}
{{- define "karp.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name objects carry: the release name when it contains the chart name. */}}
{{- define "karp.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels selecting the controller's pods. */}}
{{- define "karp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "karp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "karp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The metadata.annotations block of every object, when there are any. */}}
{{- define "karp.annotations" -}}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "karp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karp.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller image: repository:tag, then @digest when pinned. */}}
{{- define "karp.image" -}}
{{- $image := printf "%s:%s" .Values.controller.image.repository (default .Chart.AppVersion .Values.controller.image.tag) }}
{{- if .Values.controller.image.digest }}
{{- $image = printf "%s@%s" $image .Values.controller.image.digest }}
{{- end }}
{{- $image }}
{{- end }}

{{/*
The generated RBAC rules (rbac/role.yaml, written by controller-gen from the
+kubebuilder:rbac markers in pkg/ by hack/generate.sh) of the document whose
kind is the argument's .kind: "ClusterRole" or "Role".
*/}}
{{- define "karp.generatedRules" -}}
{{- $kind := .kind }}
{{- $rules := list }}
{{- range $doc := splitList "\n---\n" (printf "\n%s" (.root.Files.Get "rbac/role.yaml")) }}
{{- $obj := fromYaml $doc }}
{{- if and $obj (eq (get $obj "kind") $kind) }}
{{- $rules = concat $rules $obj.rules }}
{{- end }}
{{- end }}
{{- if not $rules }}
{{- fail (printf "rbac/role.yaml holds no %s rules: run make generate" $kind) }}
{{- end }}
{{- toYaml $rules }}
{{- end }}

{{/*
Adds the chart's selector labels as labelSelector to each term of a list of
(anti-)affinity terms or topology spread constraints that has none.
*/}}
{{- define "karp.withLabelSelector" -}}
{{- $out := list }}
{{- range .terms }}
{{- $term := deepCopy . }}
{{- if not (hasKey $term "labelSelector") }}
{{- $_ := set $term "labelSelector" (dict "matchLabels" (include "karp.selectorLabels" $.root | fromYaml)) }}
{{- end }}
{{- $out = append $out $term }}
{{- end }}
{{- toYaml $out }}
{{- end }}
