{{/* The chart's name: nameOverride, else infscale (the app.kubernetes.io/name label). */}}
{{- define "infscale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Object names: fullnameOverride; else the release name when it contains
the chart's name (`helm install infscale` names everything infscale, the job
label rules/ alerts on); else <release>-<name>. */}}
{{- /*
A component's name: the fullname and a suffix, cut to the length the
kind allows (a Job's 63: its pods carry it as the job-name label; a
CronJob's 52: it appends 11 characters for its Jobs). The check's keeps
its suffix (the fullname cut to 50): its ConfigMap cut to the fullname
would be the release's, which the hook would replace.
*/ -}}
{{- define "infscale.checkConfigName" -}}
{{- printf "%s-check-config" (include "infscale.fullname" . | trunc 50 | trimSuffix "-") -}}
{{- end -}}
{{- define "infscale.tuneName" -}}
{{- printf "%s-tune" (include "infscale.fullname" .) | trunc 52 | trimSuffix "-" -}}
{{- end -}}

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

{{/* Labels a value adds beside the chart's own on one object (dict "labels"
the value, "key" its name, "own" the chart's labels there, as YAML): a key
the chart sets would be a second one of that name, a duplicate YAML key
(kustomize, a Helm post-renderer, refuses the file; Helm keeps the last),
so it is refused, naming it: these labels select and identify the
release's objects (app.kubernetes.io/name is nameOverride's). */}}
{{- define "infscale.extraLabels" -}}
{{- $own := .own | fromYaml -}}
{{- $key := .key -}}
{{- range $k, $_ := .labels -}}
{{- if hasKey $own $k -}}
{{- $how := ternary ", which nameOverride sets" "" (eq $k "app.kubernetes.io/name") -}}
{{- fail (printf "%s: %q is a label the chart sets itself (%s: %v%s), and a label key cannot be given twice; use a key of your own" $key $k $k (get $own $k) $how) -}}
{{- end -}}
{{- end -}}
{{- with .labels }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/* The image: image.repository:image.tag, the tag defaulting to the chart's appVersion. */}}
{{- define "infscale.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString (.Values.image.tag | default .Chart.AppVersion)) -}}
{{- end -}}

{{/* The image's pull policy: image.pullPolicy when set; else what the API
server defaults an unset one to (Always for the tag latest, IfNotPresent for
any other), written out so `helm template` shows it. The tag is the one
infscale.image uses, its @digest part aside (latest@sha256:... is latest to
Kubernetes too). With IfNotPresent for :latest a node that has pulled
latest once keeps running that build. */}}
{{- define "infscale.pullPolicy" -}}
{{- if .Values.image.pullPolicy -}}
{{- .Values.image.pullPolicy -}}
{{- else -}}
{{- $tag := first (splitList "@" (toString (.Values.image.tag | default .Chart.AppVersion))) -}}
{{- ternary "Always" "IfNotPresent" (eq $tag "latest") -}}
{{- end -}}
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

{{/* Role (prefill or decode) of a prefill/decode pair target (config.roles):
its config, as YAML ({} when the target has no such role: the render fails
naming it). Called with (dict "target" T "role" R). */}}
{{- define "infscale.roleConfig" -}}
{{- $roles := (.target.config | default dict).roles | default dict -}}
{{- if not (kindIs "map" $roles) -}}{{- fail (printf "targets[%s].config.roles: a mapping of the two pools, {prefill: {...}, decode: {...}} (docs/config.md)" .target.name) -}}{{- end -}}
{{- $rc := get $roles .role -}}
{{- if not $rc -}}{{- fail (printf "targets[%s].config.roles.%s is required: a prefill/decode pair names both pools, roles: {prefill: {...}, decode: {...}}, each with its selector, metrics and maxReplicaCount (docs/config.md)" .target.name .role) -}}{{- end -}}
{{- toYaml $rc -}}
{{- end -}}

{{/* The workload of role R of pair target T, as YAML {apiVersion, kind,
name, resource, namespace}: workload.<role> of the values (apiVersion and
kind defaulting to KEDA's apps/v1 Deployment) in workload.namespace. The
render fails naming the missing value and why (.why) it is needed. Called
with (dict "target" T "role" R "why" W). */}}
{{- define "infscale.roleWorkload" -}}
{{- $w := .target.workload | default dict -}}
{{- $r := get $w .role | default dict -}}
{{- $name := required (printf "targets[%s].workload.%s.name is required for a prefill/decode pair: the %s pool's workload (e.g. {apiVersion: apps/v1, kind: Deployment, name: %s-%s}); %s" .target.name .role .role .target.name .role .why) $r.name -}}
{{- $ns := required (printf "targets[%s].workload.namespace is required for a prefill/decode pair: the namespace of both pools' workloads; %s" .target.name .why) $w.namespace -}}
{{- $other := get $w (ternary "decode" "prefill" (eq .role "prefill")) | default dict -}}
{{- if and (eq $name (toString $other.name)) (eq ($r.kind | default "Deployment") ($other.kind | default "Deployment")) -}}
{{- fail (printf "targets[%s].workload: prefill and decode name the same workload %s %q; each pool of a pair is its own workload (llm-d's %s-prefill and %s-decode)" .target.name ($r.kind | default "Deployment") $name .target.name .target.name) -}}
{{- end -}}
{{- toYaml (dict "apiVersion" ($r.apiVersion | default "apps/v1") "kind" ($r.kind | default "Deployment") "name" $name "resource" ($r.resource | default "") "namespace" $ns) -}}
{{- end -}}

{{/* The workload of one-pool target T, as YAML {apiVersion, kind, name,
resource, namespace}: workload of the values, apiVersion and kind defaulting
to KEDA's apps/v1 Deployment (as its ScaledObject's scaleTargetRef does).
The render fails naming a missing name or namespace and why (.why) it is
needed. Called with (dict "target" T "why" W). */}}
{{- define "infscale.targetWorkload" -}}
{{- $w := .target.workload | default dict -}}
{{- $name := required (printf "targets[%s].workload.name is required: the workload's name (e.g. {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: %s}); %s" .target.name .target.name .why) $w.name -}}
{{- $ns := required (printf "targets[%s].workload.namespace is required: the workload's namespace; %s" .target.name .why) $w.namespace -}}
{{- toYaml (dict "apiVersion" ($w.apiVersion | default "apps/v1") "kind" ($w.kind | default "Deployment") "name" $name "resource" ($w.resource | default "") "namespace" $ns) -}}
{{- end -}}

{{/* Fails when serve's config of a target (or of a pair's role) already
names a namespace or a scaleTargetRef other than the workload the chart
writes there with rbac.modes (it replaced them silently). Called with (dict
"cfg" CONFIG "path" "targets[x].config" "ns" NS "ref" {apiVersion, kind,
name} "from" "workload"). Renders nothing. */}}
{{- define "infscale.sameWorkload" -}}
{{- if and .ns (hasKey .cfg "namespace") (ne (toString .cfg.namespace) .ns) -}}
{{- fail (printf "%s.namespace: %q, but workload.namespace is %q; with rbac.modes the chart writes workload.namespace there: leave namespace out of config (or make them equal)" .path (toString .cfg.namespace) .ns) -}}
{{- end -}}
{{- with .cfg.scaleTargetRef -}}
{{- if or (ne (toString .apiVersion) $.ref.apiVersion) (ne (toString .kind) $.ref.kind) (ne (toString .name) $.ref.name) -}}
{{- fail (printf "%s.scaleTargetRef: %s, but %s is %s; with rbac.modes the chart writes %s there: leave scaleTargetRef out of config (or make them equal)" $.path (toJson .) $.from (toJson (pick $.ref "apiVersion" "kind" "name")) $.from) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Records one ScaledObject about to be rendered in .seen ({names: {},
workloads: {}}) and fails when an earlier one has its namespace/name (KEDA
would keep one of the two: a pair's are <target>-prefill and
<target>-decode, a one-pool target's is its workload's name) or scales its
workload (KEDA refuses a second ScaledObject on one workload; without its
webhook two HPAs would fight). Renders nothing. Called with (dict "seen" S
"name" N "namespace" NS "ref" {apiVersion, kind, name} "owner" "targets[x]'s ScaledObject"). */}}
{{- define "infscale.claimScaledObject" -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$" .name) -}}
{{- fail (printf "%s: its name %q is not a Kubernetes object name (lowercase letters, digits, '-' and '.', starting and ending with a letter or digit); a pair's ScaledObjects are named <name>-prefill and <name>-decode: name the target so" .owner .name) -}}
{{- end -}}
{{- if gt (len .name) 54 -}}
{{- fail (printf "%s: its name %q has %d characters; KEDA refuses a ScaledObject name over 54 (its HPA is keda-hpa-<name>, at most 63 characters): a pair's are <name>-prefill and <name>-decode, so a pair target's name has at most 46" .owner .name (len .name)) -}}
{{- end -}}
{{- $group := "" -}}
{{- if contains "/" .ref.apiVersion }}{{ $group = index (splitList "/" .ref.apiVersion) 0 }}{{ end -}}
{{- $wkey := printf "%s/%s/%s/%s" .namespace $group .ref.kind .ref.name -}}
{{- with get .seen.workloads $wkey -}}
{{- fail (printf "%s would scale %s %s/%s, which %s scales already; KEDA refuses a second ScaledObject on one workload (two HPAs would fight over spec.replicas): one target per workload, or scaledObject.enabled: false on one of them" $.owner $.ref.kind $.namespace $.ref.name .) -}}
{{- end -}}
{{- $_ := set .seen.workloads $wkey .owner -}}
{{- $key := printf "%s/%s" .namespace .name -}}
{{- with get .seen.names $key -}}
{{- fail (printf "%s, %s, has the name of %s (a pair's are <name>-prefill and <name>-decode, a one-pool target's is its workload.name); KEDA would keep only one of them: rename the target or the workload" $.owner $key .) -}}
{{- end -}}
{{- $_ := set .seen.names $key .owner -}}
{{- end -}}

{{- /* infscale.seriesLabels is the labels the scrape gives this
installation's series, as JSON {"known": BOOL, "labels": {NAME: VALUE}}: the
one source of what the ScaledObjects' queries match (infscale.seriesMatchers)
and of serve's prometheus.series_labels (its reads of its own series: the
rebuild at a restart, a tuned policy's revert). Another installation one
Prometheus scrapes (a release in another namespace, deploy/'s kustomize
install) exports the same target names, the default chat in both, and max()
would take the higher of the two. The labels are the scrape's, not
infscale's: the ServiceMonitor's target labels, namespace (the release
namespace) and service (the Service, the fullname), which prometheus-operator
gives every series of a ServiceMonitor. keda.seriesLabels replaces them (the
labels your own scrape gives; {} for none). With serviceMonitor.enabled:
false and no keda.seriesLabels the chart cannot know them: known is false. */ -}}
{{- define "infscale.seriesLabels" -}}
{{- $keda := .Values.keda | default dict -}}
{{- if hasKey $keda "seriesLabels" -}}
{{- $labels := $keda.seriesLabels | default dict -}}
{{- range $k := list "target" "role" "__name__" -}}
{{- if hasKey $labels $k -}}
{{- fail (printf "keda.seriesLabels.%s: the chart sets the query's %s itself (the target's name, a pair's role); keda.seriesLabels are the labels that tell this installation's series from another's (namespace, service, job, ...)" $k $k) -}}
{{- end -}}
{{- end -}}
{{- dict "known" true "labels" $labels | toJson -}}
{{- else if .Values.serviceMonitor.enabled -}}
{{- dict "known" true "labels" (dict "namespace" .Release.Namespace "service" (include "infscale.fullname" .)) | toJson -}}
{{- else -}}
{{- dict "known" false "labels" dict | toJson -}}
{{- end -}}
{{- end -}}

{{- /* infscale.seriesMatchers is what the ScaledObjects' queries add after
target="..." (and role="...") so that they read this installation's
infscale_desired_replicas only: infscale.seriesLabels as `, name="value"`
matchers sorted by name, or "" for none. With serviceMonitor.enabled: false
the render fails unless keda.seriesLabels is given, as a guess that matched
nothing would leave every ScaledObject in fallback. */ -}}
{{- define "infscale.seriesMatchers" -}}
{{- $s := include "infscale.seriesLabels" . | fromJson -}}
{{- if not $s.known -}}
{{- fail "keda.seriesLabels is required with serviceMonitor.enabled: false and a ScaledObject: the labels your scrape of infscale gives its series that tell this installation from another one Prometheus scrapes, e.g. {namespace: <this release's namespace>, service: <its fullname, the Service's name>} (the labels of the scrape job docs/chart.md gives a Prometheus without prometheus-operator); {} for none (two installations with a target of one name then read the higher of their decisions). The ScaledObjects' queries match them: a label your scrape does not give leaves KEDA on its fallback (docs/chart.md)" -}}
{{- end -}}
{{- range $k := keys $s.labels | sortAlpha -}}
{{- printf ", %s=%q" $k (toString (get $s.labels $k)) -}}
{{- end -}}
{{- end -}}

{{- /* infscale.promConfig is serve's prometheus: block: prometheus from
values.yaml, and with a url series_labels from infscale.seriesLabels (none
when they are {} or unknown: serve then reads its own series by target
alone). prometheus.series_labels in values.yaml fails: keda.seriesLabels is
the one place of them. */ -}}
{{- define "infscale.promConfig" -}}
{{- $p := deepCopy (.Values.prometheus | default dict) -}}
{{- if hasKey $p "series_labels" -}}
{{- fail "prometheus.series_labels: the chart writes serve's from keda.seriesLabels (unset: the ServiceMonitor's namespace and service), the labels the ScaledObjects' queries match too: set keda.seriesLabels instead" -}}
{{- end -}}
{{- $s := include "infscale.seriesLabels" . | fromJson -}}
{{- if and $p.url $s.labels -}}
{{- $_ := set $p "series_labels" $s.labels -}}
{{- end -}}
{{- toYaml $p -}}
{{- end -}}

{{/* One KEDA ScaledObject (deploy/keda/scaledobject.yaml; docs/keda.md has
every field's why). Called with (dict "root" $ "name" N "namespace" NS "ref"
{apiVersion, kind, name} "min" MIN "max" MAX "so" SCALEDOBJECT-VALUES "query" Q). */}}
{{- define "infscale.scaledObject" -}}
{{- $min := .min }}
{{- $so := .so }}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ .name }}
  namespace: {{ .namespace }}
  labels:
    {{- include "infscale.labels" .root | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: {{ .ref.apiVersion }}
    kind: {{ .ref.kind }}
    name: {{ .ref.name }}
  pollingInterval: {{ default 15 $so.pollingInterval }}
  {{- if eq $min 0 }}
  cooldownPeriod: 30
  {{- end }}
  minReplicaCount: {{ $min }}
  maxReplicaCount: {{ .max }}
  fallback:
    failureThreshold: {{ dig "fallback" "failureThreshold" 3 $so }}
    replicas: {{ max $min 1 }}
    behavior: currentReplicas
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleUp:
          stabilizationWindowSeconds: 0
          tolerance: "0"
          selectPolicy: Max
          policies:
          - type: Percent
            value: 1000
            periodSeconds: 15
          - type: Pods
            value: 100
            periodSeconds: 15
        scaleDown:
          stabilizationWindowSeconds: 0
          tolerance: "0"
          selectPolicy: Max
          policies:
          - type: Percent
            value: 100
            periodSeconds: 15
  triggers:
  - type: prometheus
    metricType: AverageValue
    {{- with .root.Values.keda.authenticationRef }}
    authenticationRef:
      name: {{ required "keda.authenticationRef.name: the TriggerAuthentication (or ClusterTriggerAuthentication) holding KEDA's credentials for its Prometheus" .name | quote }}
      {{- with .kind }}
      kind: {{ . }}
      {{- end }}
    {{- end }}
    metadata:
      serverAddress: {{ include "infscale.kedaServerAddress" .root }}
      query: {{ .query | quote }}
      threshold: "1"
      {{- if eq $min 0 }}
      activationThreshold: "0"
      {{- end }}
      ignoreNullValues: "false"
      {{- range $k, $v := .root.Values.keda.metadata }}
      {{ $k }}: {{ $v | quote }}
      {{- end }}
{{- end -}}

{{- /* infscale.promInlineSecrets fails the render on a Prometheus secret
given inline in values (the root context): it would be rendered into the
ConfigMap in clear, readable by whoever may read ConfigMaps in the
namespace, in kubectl describe and GitOps diffs. Its _file form, from a
Secret in extraVolumes, is taken. Called by the ConfigMap and by the
ScaledObjects' serverAddress before its check of KEDA's credentials, so
that an inline secret is named first whichever template renders first. */ -}}
{{- define "infscale.promInlineSecrets" -}}
{{- $prom := .Values.prometheus | default dict }}
{{- range $k := list "basic_auth.password" "authorization.credentials" "bearer_token" "oauth2.client_secret" "tls_config.key" "oauth2.tls_config.key" }}
{{- $path := splitList "." $k }}
{{- $parent := $prom }}
{{- range initial $path }}{{ if kindIs "map" $parent }}{{ $parent = get $parent . }}{{ end }}{{ end }}
{{- if and (kindIs "map" $parent) (hasKey $parent (last $path)) }}{{ fail (printf "prometheus.%s: a secret in values is rendered into the ConfigMap in clear; put it in a Secret mounted with extraVolumes and extraVolumeMounts, and name the file with prometheus.%s_file (docs/chart.md)" $k $k) }}{{ end }}
{{- end }}
{{- /* sigv4's secret_key has no _file form: the role comes from the
ServiceAccount (IRSA) or the keys from a Secret through extraEnv. */ -}}
{{- with get $prom "sigv4" }}{{ if and (kindIs "map" .) (hasKey . "secret_key") }}{{ fail "prometheus.sigv4.secret_key: a secret in values is rendered into the ConfigMap in clear, and sigv4 has no secret_key_file; leave access_key and secret_key out and give the pods an IAM role through serviceAccount.annotations (eks.amazonaws.com/role-arn, IRSA), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from a Secret with extraEnv (valueFrom.secretKeyRef): AWS's default chain reads either (docs/chart.md)" }}{{ end }}{{ end }}
{{- with get $prom "http_headers" }}{{ if kindIs "map" . }}{{ range $h, $v := . }}
{{- if and (kindIs "map" $v) (hasKey $v "secrets") }}{{ fail (printf "prometheus.http_headers.%s.secrets: a secret in values is rendered into the ConfigMap in clear; put it in a Secret mounted with extraVolumes and extraVolumeMounts, and name the file with prometheus.http_headers.%s.files (docs/chart.md)" $h $h) }}{{ end }}
{{- end }}{{ end }}{{ end }}
{{- end -}}

{{- /* infscale.kedaServerAddress is the ScaledObjects' serverAddress:
keda.serverAddress, else prometheus.url. KEDA does not read serve's
prometheus block: when that Prometheus is serve's and serve reaches it
with credentials (basic_auth, authorization, bearer_token_file, oauth2,
sigv4, a client certificate, http_headers such as Mimir's X-Scope-OrgID),
KEDA's reads would be refused (401: every ScaledObject in fallback for as
long as the release runs, READY False), so KEDA needs its own
(keda.authenticationRef, or keda.metadata's customHeaders) or another
address. keda.metadata may not set the keys the trigger's contract
fixes. */ -}}
{{- define "infscale.kedaServerAddress" -}}
{{- include "infscale.promInlineSecrets" . -}}
{{- $addr := .Values.keda.serverAddress | default .Values.prometheus.url | required "keda.serverAddress: the Prometheus KEDA reads infscale's metric from (prometheus.url is null: embedded mode); or scaledObject.enabled: false" -}}
{{- /* prometheus.url is serve's (serve refuses one without its scheme at
start, and the config check's hook before an install), and KEDA's too
when keda.serverAddress is empty: refused at render, as that value is. */ -}}
{{- if not (regexMatch "^https?://." (toString $addr)) }}
{{- fail (printf "prometheus.url: %q is also the ScaledObjects' serverAddress (keda.serverAddress is empty), and KEDA's prometheus scaler and serve need an http:// or https:// URL, e.g. http://prometheus-operated.monitoring.svc:9090" (toString $addr)) }}
{{- end }}
{{- range $k := list "serverAddress" "query" "threshold" "activationThreshold" "ignoreNullValues" "metricType" }}
{{- if hasKey ($.Values.keda.metadata | default dict) $k }}
{{- fail (printf "keda.metadata.%s: the chart sets it (docs/keda.md: the ScaledObject, field by field); keda.serverAddress names KEDA's Prometheus, the others are the trigger's contract with infscale_desired_replicas" $k) }}
{{- end }}
{{- end }}
{{- $km := .Values.keda.metadata | default dict }}
{{- /* SigV4 (Amazon Managed Prometheus): KEDA's prometheus scaler signs
with an AWS identity, its authenticationRef's (a TriggerAuthentication of
podIdentity provider aws, or one with AWS keys) or KEDA operator's own with
identityOwner: operator, for the workspace's region, awsRegion, which it
reads from the trigger's metadata or its TriggerAuthentication's parameters.
Without an identity its queries go unsigned; KEDA operator's without
metadata.awsRegion has no region (no TriggerAuthentication holds one). With
an authenticationRef the region may be in either: not checked. */ -}}
{{- if and (not .Values.keda.serverAddress) (get (.Values.prometheus | default dict) "sigv4") (not .Values.keda.authenticationRef) (or (not (get $km "awsRegion")) (ne (toString (get $km "identityOwner")) "operator")) }}
{{- fail (printf "prometheus.sigv4: serve signs its queries to %s, and KEDA's ScaledObjects (serverAddress, the same URL) sign theirs only with an AWS identity and the workspace's region: keda.authenticationRef naming a TriggerAuthentication with podIdentity: {provider: aws} in each workload namespace (or a ClusterTriggerAuthentication), with keda.metadata.awsRegion or an awsRegion parameter in it; or keda.metadata.identityOwner: operator (KEDA operator's IAM role, which needs aps:QueryMetrics) with keda.metadata.awsRegion; without them every read is refused and every ScaledObject stays in fallback; or keda.serverAddress, a Prometheus KEDA reaches without signing (docs/chart.md, Managed Prometheus services)" .Values.prometheus.url) }}
{{- end }}
{{- if and (not .Values.keda.serverAddress) (not .Values.keda.authenticationRef) (not (hasKey $km "authModes")) (not (hasKey $km "customHeaders")) }}
{{- $p := .Values.prometheus | default dict }}
{{- $creds := list }}
{{- /* sigv4: checked above, where KEDA's own form is known. */ -}}
{{- range $k := list "basic_auth" "authorization" "bearer_token_file" "oauth2" }}
{{- if get $p $k }}{{ $creds = append $creds (printf "prometheus.%s" $k) }}{{ end }}
{{- end }}
{{- /* A header is a credential when read from a secret file or named as
one (Authorization; Mimir's and Cortex's tenant, X-Scope-OrgID), not a
User-Agent. */ -}}
{{- with $p.http_headers }}{{ if kindIs "map" . }}{{ range $h, $v := . }}
{{- if or (has (lower $h) (list "authorization" "x-scope-orgid")) (and (kindIs "map" $v) (or (hasKey $v "files") (hasKey $v "secrets"))) }}{{ $creds = append $creds (printf "prometheus.http_headers.%s" $h) }}{{ end }}
{{- end }}{{ end }}{{ end }}
{{- if and (kindIs "map" $p.tls_config) (or $p.tls_config.cert_file $p.tls_config.key_file) }}{{ $creds = append $creds "prometheus.tls_config.cert_file" }}{{ end }}
{{- if $creds }}
{{- fail (printf "%s: serve reaches %s with credentials, which KEDA's ScaledObjects (serverAddress, the same URL) do not have: their reads would be refused and every ScaledObject stay in fallback. Give KEDA its own: keda.authenticationRef (a TriggerAuthentication in each workload namespace, or a ClusterTriggerAuthentication) with keda.metadata.authModes (basic, bearer, tls), or keda.metadata.customHeaders for a header; or keda.serverAddress, a Prometheus KEDA reaches without them" (join ", " $creds) $addr) }}
{{- end }}
{{- end }}
{{- $addr -}}
{{- end -}}

{{- /* infscale.tuneDir checks a target's config.tune against the tune
CronJob (dict "root" $ "target" TARGET). serve reads config.tune.dir in its
own pod: a directory that is not there is a `tuning failed` line each
minute and no tuning, which nothing else shows. It is there when it is
tune.results.path with tune.enabled (the results claim, mounted read-only),
or at or under a mountPath of extraVolumeMounts (results brought by the
user). With tune.enabled the CronJob tunes every target with a tune: block
into tune.results.path (--out), so a block without dir, or with another
dir, would be tuned twice (the CronJob's result never read). With the
leases mode serve runs --leader-elect, which refuses mode: adopt without
dir (each replica would adopt its own in-process candidate). */ -}}
{{- define "infscale.tuneDir" -}}
{{- $root := .root }}
{{- $name := .target.name }}
{{- $tu := (.target.config | default dict).tune }}
{{- if kindIs "map" $tu }}
{{- $path := clean (toString $root.Values.tune.results.path) }}
{{- if $tu.dir }}
{{- $dir := clean (toString $tu.dir) }}
{{- $mounted := and $root.Values.tune.enabled (eq $dir $path) }}
{{- range $root.Values.extraVolumeMounts }}
{{- $mp := clean (toString .mountPath) }}
{{- if or (eq $dir $mp) (hasPrefix (printf "%s/" (trimSuffix "/" $mp)) $dir) }}{{ $mounted = true }}{{ end }}
{{- end }}
{{- if and $root.Values.tune.enabled (not (eq $dir $path)) }}
{{- fail (printf "targets[%s].config.tune.dir: %s, but the tune CronJob (tune.enabled) writes every tuned target's result to tune.results.path %s, mounted there in serve's pod: set dir to %s, or tune.enabled: false to bring results yourself" $name $dir $path $path) }}
{{- end }}
{{- if not $mounted }}
{{- fail (printf "targets[%s].config.tune.dir: %s is not mounted in serve's pod: tune.enabled is false (its results claim is mounted at tune.results.path only with it) and no extraVolumeMounts mountPath covers it, so serve would log `tuning failed` each minute and never tune; set tune.enabled: true with tune.results.claimName (and dir: %s), mount your results with extraVolumes and extraVolumeMounts, or leave dir out to tune in serve" $name $dir $path) }}
{{- end }}
{{- else if $root.Values.tune.enabled }}
{{- fail (printf "targets[%s].config.tune: has no dir, so serve tunes it in process while the tune CronJob (tune.enabled) also tunes it into tune.results.path, a result never read: set tune.dir: %s" $name $path) }}
{{- else if and (eq (toString $tu.mode) "adopt") (has "leases" (splitList "," (include "infscale.modes" $root))) }}
{{- fail (printf "targets[%s].config.tune: mode: adopt without dir tunes in serve, and with rbac.modes leases serve runs as several replicas (--leader-elect), each tuning on its own and adopting its own candidate; serve refuses it (exit 2): set tune.enabled: true with tune.results.claimName and tune.dir: %s, or mode: shadow" $name $path) }}
{{- end }}
{{- end }}
{{- end }}

{{/* infscale.checkTimeZone fails the render when the CronJob's timeZone
(the dict's "zone", named "key" in the message) is one the API server
refuses: "Local" (any case), or a name no database it may read holds. It
loads the zone with Go's time.LoadLocation: from its machine's zoneinfo,
else from the database Go embeds in kube-apiserver (time/tzdata), which
holds the IANA backward names too (US/Eastern, Asia/Calcutta). A name is
taken when it is in the chart's timezones.txt (the dict's "zones": the
names of that embedded database, TestChartTimeZonesMatchGo) or loads on the
machine running Helm (sprig's dateInZone, which falls back to UTC when the
machine's database lacks it: UTC's own names are in timezones.txt). The
machine's database alone refused names the API server takes (Debian 13
and Ubuntu 24.04 keep the backward names in tzdata-legacy); a zone newer
than both is refused until timezones.txt is regenerated. A name that is
one of the list's but for case (europe/berlin) is refused naming the
spelling, though a case-insensitive disk (macOS) loads it: the API
server's Linux does not. The schema has checked the shape. */}}
{{- define "infscale.checkTimeZone" -}}
{{- $z := toString .zone -}}
{{- if $z -}}
{{- if eq (lower $z) "local" -}}
{{- fail (printf "%s: %q is not a time zone the API server takes (\"Local\" is the node's, which a CronJob may not use); name one, e.g. Europe/Berlin or UTC, or leave it empty for the kube-controller-manager's" .key $z) -}}
{{- end -}}
{{- $zones := splitList "\n" .zones -}}
{{- if not (has $z $zones) -}}
{{- range $zones -}}
{{- if eq (lower .) (lower $z) -}}
{{- fail (printf "%s: %q is spelt %q in the IANA time zone database, whose names are case-sensitive (the API server would refuse the CronJob: unknown time zone)" $.key $z .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* 2026-01-01T00:00:00Z: any fixed instant. */ -}}
{{- $onMachine := ne (dateInZone "MST" 1767225600 $z) "UTC" -}}
{{- if not (or $onMachine (has $z $zones)) -}}
{{- fail (printf "%s: %q is not in the IANA time zone database (the API server would refuse the CronJob: unknown time zone); use a zone name as spelt there, case included, e.g. Europe/Berlin, America/New_York or UTC (the chart's timezones.txt lists them)" .key $z) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* infscale.checkSchedule fails the render when the CronJob schedule
(the dict's "schedule", named "key" in the message) is one the API server
refuses: it parses it with robfig/cron's ParseStandard, whose ranges are
minute 0-59, hour 0-23, day of month 1-31, month 1-12 (jan-dec), day of
week 0-6 (sun-sat), each field a comma list of *, ?, N or N-M (N <= M)
with an optional /step of at least 1 (an empty item is skipped; one that
starts *- or ?- is read as *, what follows the - unread). The
schema has checked the shape: five fields or a macro. */}}
{{- define "infscale.checkSchedule" -}}
{{- $s := .schedule -}}
{{- if not (hasPrefix "@" $s) -}}
{{- $specs := list
  (dict "name" "minute" "min" 0 "max" 59 "names" list)
  (dict "name" "hour" "min" 0 "max" 23 "names" list)
  (dict "name" "day of month" "min" 1 "max" 31 "names" list)
  (dict "name" "month" "min" 1 "max" 12 "names" (list "jan" "feb" "mar" "apr" "may" "jun" "jul" "aug" "sep" "oct" "nov" "dec"))
  (dict "name" "day of week" "min" 0 "max" 6 "names" (list "sun" "mon" "tue" "wed" "thu" "fri" "sat")) -}}
{{- range $i, $f := regexSplit "\\s+" (trim $s) -1 -}}
{{- $spec := index $specs $i -}}
{{- $where := printf "%s: %q: its %s field %q" $.key $s $spec.name $f -}}
{{- range $item := splitList "," $f -}}
{{- if $item -}}
{{- $parts := splitList "/" $item -}}
{{- if gt (len $parts) 2 -}}{{- fail (printf "%s: %q has more than one /step" $where $item) -}}{{- end -}}
{{- if eq (len $parts) 2 -}}
{{- $step := index $parts 1 -}}
{{- if or (not (regexMatch "^\\+?[0-9]+$" $step)) (lt (atoi $step) 1) -}}{{- fail (printf "%s: the step of %q must be a whole number of at least 1" $where $item) -}}{{- end -}}
{{- end -}}
{{- $r := index $parts 0 -}}
{{- if not (has (first (splitList "-" $r)) (list "*" "?")) -}}
{{- $ends := splitList "-" $r -}}
{{- if gt (len $ends) 2 -}}{{- fail (printf "%s: %q is not N or N-M" $where $r) -}}{{- end -}}
{{- $vals := list -}}
{{- range $e := $ends -}}
{{- $v := 0 -}}
{{- $n := lower $e -}}
{{- if has $n $spec.names -}}
{{- range $k, $nm := $spec.names }}{{ if eq $nm $n }}{{ $v = add $spec.min $k }}{{ end }}{{ end -}}
{{- else if regexMatch "^\\+?[0-9]+$" $e -}}
{{- $v = atoi $e -}}
{{- else -}}
{{- fail (printf "%s: %q is not a number%s" $where $e (ternary (printf " or a name (%s)" (join ", " $spec.names)) "" (gt (len $spec.names) 0))) -}}
{{- end -}}
{{- if or (lt (int $v) (int $spec.min)) (gt (int $v) (int $spec.max)) -}}
{{- fail (printf "%s: %s is not in %d-%d (the API server refuses the CronJob)" $where $e (int $spec.min) (int $spec.max)) -}}
{{- end -}}
{{- $vals = append $vals (int $v) -}}
{{- end -}}
{{- if and (eq (len $vals) 2) (gt (index $vals 0) (index $vals 1)) -}}
{{- fail (printf "%s: the range %q runs backwards (the API server refuses the CronJob); write the smaller end first" $where $r) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
