{{/* The chart name (app.kubernetes.io/name). */}}
{{- define "tollgate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: the release name, plus the chart name unless it contains it. At
most 28 characters, so that <fullname>-controller-manager-metrics-service is a valid Service name.
*/}}
{{- define "tollgate.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 28 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 28 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 28 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* helm.sh/chart */}}
{{- define "tollgate.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object: Helm's recommended set and commonLabels. */}}
{{- define "tollgate.labels" -}}
helm.sh/chart: {{ include "tollgate.chart" . }}
app.kubernetes.io/name: {{ include "tollgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The manager pods' selector labels (the same as config/manager's, so a kustomize install can be adopted). */}}
{{- define "tollgate.manager.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: {{ include "tollgate.name" . }}
{{- end }}

{{/* The decider pods' selector labels. */}}
{{- define "tollgate.decider.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tollgate.name" . }}
app.kubernetes.io/component: decider
{{- end }}

{{- define "tollgate.manager.serviceAccountName" -}}
{{- if .Values.manager.serviceAccount.create }}
{{- default (printf "%s-controller-manager" (include "tollgate.fullname" .)) .Values.manager.serviceAccount.name }}
{{- else }}
{{- required "manager.serviceAccount.name is required when manager.serviceAccount.create is false" .Values.manager.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "tollgate.decider.serviceAccountName" -}}
{{- if .Values.decider.serviceAccount.create }}
{{- default (printf "%s-decider" (include "tollgate.fullname" .)) .Values.decider.serviceAccount.name }}
{{- else }}
{{- required "decider.serviceAccount.name is required when decider.serviceAccount.create is false" .Values.decider.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* An image reference from a dict with repository, tag and digest, defaulting to .Values.image. */}}
{{- define "tollgate.imageRef" -}}
{{- $img := .image -}}
{{- $root := .root -}}
{{- $repo := default $root.Values.image.repository $img.repository -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $repo $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default (default $root.Chart.AppVersion $root.Values.image.tag) $img.tag) -}}
{{- end -}}
{{- end }}

{{/* The tollgate image. */}}
{{- define "tollgate.image" -}}
{{- include "tollgate.imageRef" (dict "image" .Values.image "root" .) -}}
{{- end }}

{{/* The MCP gateway sidecar image (--mcp-proxy-image): manager.mcpProxyImage, else the tollgate image. */}}
{{- define "tollgate.mcpProxyImage" -}}
{{- if or .Values.manager.mcpProxyImage.repository .Values.manager.mcpProxyImage.tag -}}
{{- include "tollgate.imageRef" (dict "image" (dict "repository" .Values.manager.mcpProxyImage.repository "tag" .Values.manager.mcpProxyImage.tag) "root" .) -}}
{{- else -}}
{{- include "tollgate.image" . -}}
{{- end -}}
{{- end }}

{{- define "tollgate.webhookServiceName" -}}
{{- printf "%s-webhook-service" (include "tollgate.fullname" .) }}
{{- end }}

{{- define "tollgate.mutatingWebhookName" -}}
{{- printf "%s-mutating-webhook-configuration" (include "tollgate.fullname" .) }}
{{- end }}

{{- define "tollgate.validatingWebhookName" -}}
{{- printf "%s-validating-webhook-configuration" (include "tollgate.fullname" .) }}
{{- end }}

{{- define "tollgate.certificateName" -}}
{{- printf "%s-serving-cert" (include "tollgate.fullname" .) }}
{{- end }}

{{/* The decision endpoint URL injected into opted-in pods. */}}
{{- define "tollgate.deciderURL" -}}
{{- default (printf "http://%s-decider.%s.svc:%v" (include "tollgate.fullname" .) .Release.Namespace .Values.decider.service.port) .Values.manager.deciderURL }}
{{- end }}

{{/*
The bytes of a memory quantity: digits with an optional binary (Ki Mi Gi Ti) or decimal (k M G T)
suffix. Anything else fails the render with a hint.
*/}}
{{- define "tollgate.quantityBytes" -}}
{{- $q := toString . -}}
{{- $units := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $num := regexFind "^[0-9]+" $q -}}
{{- $suffix := trimPrefix $num $q -}}
{{- if or (not $num) (and $suffix (not (hasKey $units $suffix))) -}}
{{- fail (printf "decider.resources.limits.memory %q: cannot compute GOMEMLIMIT from it; write it as digits with a Ki, Mi, Gi, Ti, k, M, G or T suffix, or set decider.goMemLimit" $q) -}}
{{- end -}}
{{- $mult := 1 -}}
{{- if $suffix -}}{{- $mult = get $units $suffix -}}{{- end -}}
{{- mul (int64 $num) $mult -}}
{{- end }}

{{/* GOMEMLIMIT of the decider: decider.goMemLimit, else goMemLimitPercent of the memory limit; empty for none. */}}
{{- define "tollgate.decider.goMemLimit" -}}
{{- if .Values.decider.goMemLimit -}}
{{- .Values.decider.goMemLimit -}}
{{- else if and .Values.decider.goMemLimitPercent .Values.decider.resources.limits .Values.decider.resources.limits.memory -}}
{{- $bytes := include "tollgate.quantityBytes" .Values.decider.resources.limits.memory | int64 -}}
{{- div (mul $bytes (int64 .Values.decider.goMemLimitPercent)) 100 -}}
{{- end -}}
{{- end }}

{{/* The preferred anti-affinity that spreads a component's replicas over nodes. */}}
{{- define "tollgate.spreadAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- toYaml . | nindent 10 }}
{{- end }}

{{/* The namespaceSelector of every webhook: never kube-system, the release namespace, or namespaces labelled tollgate.dev/webhook=ignore. */}}
{{- define "tollgate.webhookNamespaceSelector" -}}
namespaceSelector:
  matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
    - kube-system
    - {{ .Release.Namespace }}
  - key: tollgate.dev/webhook
    operator: NotIn
    values:
    - ignore
{{- end }}

{{/* The cert-manager CA injection annotation of the webhook configurations. */}}
{{- define "tollgate.webhookAnnotations" -}}
{{- if eq .Values.webhook.certificates.provider "cert-manager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "tollgate.certificateName" . }}
{{- end }}
{{- end }}
