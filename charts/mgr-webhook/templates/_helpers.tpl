{{/* The namespace everything namespaced goes into. */}}
{{- define "mgr-webhook.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end }}

{{/* Labels of every object. */}}
{{- define "mgr-webhook.labels" -}}
app.kubernetes.io/part-of: mgr-webhook
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- with .Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* An image reference: (list $ .Values.image.<component>). */}}
{{- define "mgr-webhook.image" -}}
{{- $root := index . 0 -}}
{{- $img := index . 1 -}}
{{- printf "%s:%s" $img.repository (default $root.Chart.AppVersion $img.tag) -}}
{{- end }}
