{{/* Registry host of the cluster's region (VPC endpoint). */}}
{{- define "ack-ai-installer.registry" -}}
registry-vpc.{{ .Values.global.region }}.aliyuncs.com
{{- end -}}

{{/* Full cgpu-installer image reference. */}}
{{- define "ack-ai-installer.cgpuImage" -}}
{{ include "ack-ai-installer.registry" . }}/{{ .Values.cgpu.image }}:{{ .Values.cgpu.tag }}
{{- end -}}

{{- define "ack-ai-installer.labels" -}}
app: ack-ai-installer
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
release: {{ .Release.Name }}
{{- end -}}
