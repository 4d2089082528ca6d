{{/* The chart's name: nameOverride, else infscale (the app.kubernetes.io/name label). */}}
{{- define "infscale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object names: fullnameOverride; else the release name when it contains
the chart's name (`helm install infscale` names everything infscale, the job
label rules/ alerts on); else <release>-<name>. */}}
{{- define "infscale.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "infscale.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the pods (Deployment, Service, ServiceMonitor, PodDisruptionBudget). */}}
{{- define "infscale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "infscale.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels every object carries (deploy/base's kustomize labels). */}}
{{- define "infscale.labels" -}}
{{ include "infscale.selectorLabels" . }}
app.kubernetes.io/component: recommender
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The image: image.repository:image.tag, the tag defaulting to the chart's appVersion. */}}
{{- define "infscale.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{/* The RBAC modes, validated: a list of read-only, apply, deletion-cost, leases. */}}
{{- define "infscale.modes" -}}
{{- range .Values.rbac.modes -}}
{{- if not (has . (list "read-only" "apply" "deletion-cost" "leases")) -}}
{{- fail (printf "rbac.modes: %q is not a mode; use read-only, apply, deletion-cost or leases (or [] for no API access)" .) -}}
{{- end -}}
{{- end -}}
{{- join "," .Values.rbac.modes -}}
{{- end -}}

{{/* The pods' ServiceAccount, "" for none. The pods need one with
rbac.modes (the Roles bind to it), or when serviceAccount.name or
.annotations are set (workload identity to a managed Prometheus); otherwise
they run as the namespace's default account with no token. */}}
{{- define "infscale.serviceAccountName" -}}
{{- if or (include "infscale.modes" .) .Values.serviceAccount.name .Values.serviceAccount.annotations -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "infscale.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: required with serviceAccount.create: false (the existing account the pods run as and the RoleBindings bind)" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
{{- end -}}
