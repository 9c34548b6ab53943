{{/* Names and labels. A service's key (camelCase) becomes its component name (kebab-case). */}}
{{- define "mnemo.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mnemo.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mnemo
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "mnemo.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "mnemo.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "mnemo.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "mnemo.image" -}}
{{- $image := mergeOverwrite (deepCopy .root.Values.global.image) (.svc.image | default dict) -}}
{{- printf "%s:%s" $image.repository ($image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}

{{- define "mnemo.pullPolicy" -}}
{{- (mergeOverwrite (deepCopy .root.Values.global.image) (.svc.image | default dict)).pullPolicy -}}
{{- end -}}

{{/* What each kind of service may do (the chart's own knowledge, not a value to override). */}}
{{- define "mnemo.singletons" -}}ingest dreamer memory{{- end -}}
{{/* The stages that share the log's partitions between their replicas (mnemo_runtime.partitions). */}}
{{- define "mnemo.partitioned" -}}projector memoryProjection deriver summarizer{{- end -}}
{{- define "mnemo.readers" -}}gateway context dialectic grpc{{- end -}}
{{- define "mnemo.vectorReaders" -}}memoryProjection context dialectic dreamer{{- end -}}
{{- define "mnemo.components" -}}projector ingest deriver summarizer dreamer context dialectic gateway grpc{{- end -}}
{{/* The durable JetStream consumers each background worker reads (libs/schema subjects and dreams). */}}
{{- define "mnemo.workerDurables" -}}
{{- $n := int .Values.partitions -}}
deriver: [{{ range $i := until $n }}{{ if $i }}, {{ end }}deriver-p{{ $i }}{{ end }}]
summarizer: [{{ range $i := until $n }}{{ if $i }}, {{ end }}summarizer-p{{ $i }}{{ end }}]
dreamer: [dreamer-schedule, dreamer]
{{- end -}}

{{/* Refusals: every configuration the chart cannot run correctly fails here, with the fix. */}}
{{- define "mnemo.validate" -}}
{{- $v := .Values -}}
{{- if not $v.database.existingSecret -}}
{{- fail "database.existingSecret is required: name a Secret holding the Postgres URL (key database.existingSecretKey); the chart never takes the URL in plain text" -}}
{{- end -}}
{{- if not $v.nats.url -}}
{{- fail "NATS has no source: set nats.url (its address; the password comes from nats.existingSecret)" -}}
{{- end -}}
{{- if contains "@" $v.nats.url -}}
{{- fail "nats.url carries credentials: give the address only; the service user's password is read from nats.existingSecret" -}}
{{- end -}}
{{- if and $v.auth.enabled (not $v.auth.existingSecret) -}}
{{- fail "auth.enabled needs auth.existingSecret: a Secret holding verify.pem (and signing.pem, to mint keys) or secret (never rendered in plain text)" -}}
{{- end -}}
{{- $singletons := splitList " " (include "mnemo.singletons" .) -}}
{{- $partitioned := splitList " " (include "mnemo.partitioned" .) -}}
{{- $partitions := int $v.partitions -}}
{{- $readers := splitList " " (include "mnemo.readers" .) -}}
{{- $vectorReaders := splitList " " (include "mnemo.vectorReaders" .) -}}
{{- $components := splitList " " (include "mnemo.components" .) -}}
{{- $workers := include "mnemo.workerDurables" . | fromYaml -}}
{{- range $name, $svc := $v.services -}}
{{- if $svc.enabled -}}
{{- range $svc.components -}}
{{- if not (has . $components) -}}
{{- fail (printf "services.%s.components: unknown component %q (known: %s)" $name . (join ", " $components)) -}}
{{- end -}}
{{- end -}}
{{- if and (has $name $singletons) (gt (int ($svc.replicas | default 1)) 1) -}}
{{- fail (printf "services.%s.replicas must be 1: its work is not shared by partition, so a second replica would process the same work differently (ingest: a workspace must have one writer)" $name) -}}
{{- end -}}
{{- if and (has $name $partitioned) (gt (int ($svc.replicas | default 1)) $partitions) -}}
{{- fail (printf "services.%s.replicas (%d) exceeds partitions (%d): each partition is worked by one replica, so the replicas beyond the partition count would stay idle" $name (int $svc.replicas) $partitions) -}}
{{- end -}}
{{- if and (dig "autoscaling" "enabled" false $svc) (not (has $name $readers)) -}}
{{- fail (printf "services.%s.autoscaling: only the stateless readers (%s) scale with an HPA" $name (join ", " $readers)) -}}
{{- end -}}
{{- if and $v.keda.enabled (dig "keda" "enabled" false $svc) -}}
{{- if not (hasKey $workers $name) -}}
{{- fail (printf "services.%s.keda: only the background workers (%s) scale on consumer lag" $name (join ", " (keys $workers | sortAlpha))) -}}
{{- end -}}
{{- $most := ternary $partitions 1 (has $name $partitioned) -}}
{{- if gt (int (dig "keda" "maxReplicaCount" 1 $svc)) $most -}}
{{- if has $name $partitioned -}}
{{- fail (printf "services.%s.keda.maxReplicaCount exceeds partitions (%d): each partition is worked by one replica" $name $partitions) -}}
{{- else -}}
{{- fail (printf "services.%s.keda.maxReplicaCount must be 1: its work is not shared by partition" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (has $name $vectorReaders) (not $v.qdrant.url) -}}
{{- fail (printf "services.%s runs apart from the embedded vector index: set qdrant.url (a Qdrant server), or leave it to services.memory" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $v.services.memory.enabled $v.services.memoryProjection.enabled -}}
{{- fail "services.memory and services.memoryProjection both project memory: enable one (memoryProjection needs qdrant.url)" -}}
{{- end -}}
{{- if and $v.services.memory.enabled (not $v.qdrant.url) (gt (int ($v.services.memory.replicas | default 1)) 1) -}}
{{- fail "services.memory.replicas must be 1 with the embedded vector index (it has a single owner)" -}}
{{- end -}}
{{- if and $v.keda.enabled (not (.Capabilities.APIVersions.Has "keda.sh/v1alpha1/ScaledObject")) -}}
{{- fail "keda.enabled: KEDA's ScaledObject CRD (keda.sh/v1alpha1) is not installed in this cluster" -}}
{{- end -}}
{{- end -}}

{{/* Plain settings every container gets, as a ConfigMap's data (also inlined into the Job). */}}
{{- define "mnemo.config" -}}
MNEMO_LOG_LEVEL: {{ .Values.global.logLevel | quote }}
MNEMO_LOG_FORMAT: "json"
MNEMO_PARTITIONS: {{ .Values.partitions | quote }}
MNEMO_STATE_DIR: "/var/lib/mnemo"
MNEMO_METRICS_PORT: {{ .Values.metrics.port | quote }}
MNEMO_METRICS_HOST: "0.0.0.0"
NATS_URL: {{ tpl .Values.nats.url . | quote }}
{{- if .Values.nats.existingSecret }}
MNEMO_NATS_USER: {{ .Values.nats.user | quote }}
{{- end }}
{{- if not .Values.auth.enabled }}
MNEMO_AUTH: "off"
{{- end }}
{{- with .Values.qdrant.url }}
QDRANT_URL: {{ . | quote }}
{{- end }}
{{- range $k, $val := .Values.models.env }}
{{ $k }}: {{ $val | quote }}
{{- end }}
{{- range $k, $val := .Values.global.env }}
{{ $k }}: {{ $val | quote }}
{{- end }}
{{- end -}}

{{/* Secrets, by reference only. */}}
{{- define "mnemo.secretEnv" -}}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.database.existingSecret }}
      key: {{ .Values.database.existingSecretKey }}
{{- with .Values.nats.existingSecret }}
- name: MNEMO_NATS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.nats.existingSecretKey }}
{{- end }}
{{- if .Values.models.existingSecret }}
{{- range $env, $key := .Values.models.keys }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $.Values.models.existingSecret }}
      key: {{ $key }}
      optional: true
{{- end }}
{{- end }}
{{- end -}}
