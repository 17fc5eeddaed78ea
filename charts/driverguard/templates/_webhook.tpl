{{/*
Helpers of the admission webhook's objects (webhook-*.yaml). Names are <release>-driverguard
(or the release name when it already contains "driverguard"), cut to fit 63 characters.
*/}}

{{- define "driverguard.webhook.fullname" -}}
{{- $base := .Release.Name -}}
{{- if not (contains .Chart.Name .Release.Name) -}}
{{- $base = printf "%s-%s" .Release.Name .Chart.Name -}}
{{- end -}}
{{- printf "%s-webhook" ($base | trunc 55 | trimSuffix "-") -}}
{{- end -}}

{{- define "driverguard.webhook.certSecret" -}}
{{- printf "%s-cert" (include "driverguard.webhook.fullname" .) -}}
{{- end -}}

{{- define "driverguard.webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "driverguard.webhook.labels" -}}
{{ include "driverguard.labels" . }}
app.kubernetes.io/component: webhook
{{- end -}}

{{/* registry/repository:tag, or repository:tag without a registry (what `make image` records). */}}
{{- define "driverguard.webhook.image" -}}
{{- $img := .Values.webhook.image -}}
{{- $repo := $img.repository -}}
{{- if $img.registry -}}
{{- $repo = printf "%s/%s" $img.registry $img.repository -}}
{{- end -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* The annotations of a webhook configuration: cert-manager's CA injection, in certManager mode. */}}
{{- define "driverguard.webhook.configAnnotations" -}}
{{- if eq .Values.webhook.certificates.mode "certManager" }}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "driverguard.webhook.fullname" .) }}
{{- end }}
{{- end -}}
