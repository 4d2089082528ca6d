{{/* Labels every object carries (deploy/base's kustomize labels). */}}
{{- define "infscale.labels" -}}
app.kubernetes.io/name: infscale
app.kubernetes.io/component: recommender
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
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
