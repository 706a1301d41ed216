{{/*
Shared helpers of the kafka-archive chart.

Naming: every object is "<fullname>-<component>" (truncated to 63 characters, the DNS label
limit, because Services and pod host names derive from these names).
Labels: the app.kubernetes.io/* recommended labels; selectors use name, instance and component,
which never change across upgrades (selectors are immutable).
*/}}

{{- define "kafka-archive.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kafka-archive.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<suffix>", DNS-label safe. Call with (list $ "suffix"). */}}
{{- define "kafka-archive.componentName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "kafka-archive.fullname" $root) (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kafka-archive.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of a component. Call with (list $ "component"). */}}
{{- define "kafka-archive.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "kafka-archive.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* Full labels of a component's objects and pods. Call with (list $ "component"). */}}
{{- define "kafka-archive.labels" -}}
{{- $root := index . 0 -}}
helm.sh/chart: {{ include "kafka-archive.chart" $root }}
{{ include "kafka-archive.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: kafka-archive
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels matching every pod of the release (NetworkPolicy default deny). */}}
{{- define "kafka-archive.releaseSelector" -}}
app.kubernetes.io/name: {{ include "kafka-archive.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* A podSelector term for some components. Call with (list $ (list "worker" "archiver")). */}}
{{- define "kafka-archive.componentsSelector" -}}
{{- $root := index . 0 -}}
matchLabels:
  {{- include "kafka-archive.releaseSelector" $root | nindent 2 }}
matchExpressions:
  - key: app.kubernetes.io/component
    operator: In
    values:
      {{- toYaml (index . 1) | nindent 6 }}
{{- end -}}

{{- define "kafka-archive.image" -}}
{{- printf "%s:%s" .Values.images.platform.repository .Values.images.platform.tag -}}
{{- end -}}

{{- define "kafka-archive.sparkImage" -}}
{{- $repo := default .Values.images.platform.repository .Values.spark.image.repository -}}
{{- $tag := default .Values.images.platform.tag .Values.spark.image.tag -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}

{{- define "kafka-archive.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Service account names. Call with (list $ "airflow"|"worker"|"archiver"|"spark"). */}}
{{- define "kafka-archive.serviceAccountName" -}}
{{- $root := index . 0 -}}
{{- $which := index . 1 -}}
{{- $sa := index $root.Values.serviceAccounts $which -}}
{{- if $sa.name -}}
{{- $sa.name -}}
{{- else -}}
{{- include "kafka-archive.componentName" (list $root $which) -}}
{{- end -}}
{{- end -}}

{{/* The fetch archivers' service account (its values key is not a DNS label). */}}
{{- define "kafka-archive.fetchArchiverServiceAccount" -}}
{{- .Values.serviceAccounts.fetchArchiver.name | default (include "kafka-archive.componentName" (list . "fetch-archiver")) -}}
{{- end -}}

{{/* Annotations that give a service account object-store access (IRSA / GKE workload identity). */}}
{{- define "kafka-archive.workloadIdentityAnnotations" -}}
{{- $wi := .Values.objectStore.workloadIdentity -}}
{{- if eq $wi.type "aws-irsa" }}
eks.amazonaws.com/role-arn: {{ $wi.awsRoleArn | quote }}
{{- else if eq $wi.type "gke" }}
iam.gke.io/gcp-service-account: {{ $wi.gcpServiceAccount | quote }}
{{- end }}
{{- end -}}

{{/* s3://bucket[/prefix] */}}
{{- define "kafka-archive.storeUri" -}}
{{- $prefix := trimAll "/" .Values.objectStore.prefix -}}
{{- if $prefix -}}
{{- printf "s3://%s/%s" .Values.objectStore.bucket $prefix -}}
{{- else -}}
{{- printf "s3://%s" .Values.objectStore.bucket -}}
{{- end -}}
{{- end -}}

{{- define "kafka-archive.postgresqlHost" -}}
{{- include "kafka-archive.componentName" (list . "postgresql") -}}
{{- end -}}

{{- define "kafka-archive.redisHost" -}}
{{- include "kafka-archive.componentName" (list . "redis") -}}
{{- end -}}

{{- define "kafka-archive.apiServerUrl" -}}
{{- printf "http://%s:%d" (include "kafka-archive.componentName" (list . "api-server")) (int .Values.apiServer.service.port) -}}
{{- end -}}

{{/*
The Celery queue of one broker, the single source of the name: the archive configuration and
the archiver workers both call this, so a task can never be routed to a queue nobody serves.
Call with (list $ $cluster $broker). Empty in shared mode (the default queue).
*/}}
{{- define "kafka-archive.brokerQueue" -}}
{{- $root := index . 0 -}}
{{- $cluster := index . 1 -}}
{{- $broker := index . 2 -}}
{{- $mode := $root.Values.archivers.mode -}}
{{- if $broker.queue -}}
{{- $broker.queue -}}
{{- else if eq $mode "perBroker" -}}
{{- printf "%s%s-broker-%d" $root.Values.archivers.perBroker.queuePrefix $cluster.name (int $broker.id) -}}
{{- else if eq $mode "daemonSet" -}}
{{- printf "%s%s" $root.Values.archivers.daemonSet.queuePrefix $broker.node -}}
{{- end -}}
{{- end -}}

{{/* Name of a per-broker archiver. Call with (list $ $cluster $broker). */}}
{{- define "kafka-archive.brokerArchiverName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-archiver-%s-%d" (include "kafka-archive.fullname" $root) (index . 1).name (int (index . 2).id) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kafka-archive.archiveConfigEnabled" -}}
{{- if .Values.archive.clusters -}}true{{- end -}}
{{- end -}}

{{/*
Environment of every Airflow container: Airflow's secrets, metadata DB and Celery broker.
Secrets are only referenced (secretKeyRef); URLs of in-chart services are composed with
Kubernetes' $(VAR) expansion from a password variable defined just before them.
*/}}
{{- define "kafka-archive.airflowEnv" -}}
- name: AIRFLOW__CORE__FERNET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.airflow.secrets.existingSecret }}
      key: {{ .Values.airflow.secrets.fernetKeyKey }}
- name: AIRFLOW__API_AUTH__JWT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .Values.airflow.secrets.existingSecret }}
      key: {{ .Values.airflow.secrets.jwtSecretKey }}
- name: AIRFLOW__API__SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.airflow.secrets.existingSecret }}
      key: {{ .Values.airflow.secrets.apiSecretKeyKey }}
{{- if eq .Values.airflow.metadataDatabase.type "external" }}
- name: AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
  valueFrom:
    secretKeyRef:
      name: {{ .Values.airflow.metadataDatabase.external.existingSecret }}
      key: {{ .Values.airflow.metadataDatabase.external.urlKey }}
{{- else }}
- name: AIRFLOW_DB_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.postgresql.auth.existingSecret }}
      key: {{ .Values.postgresql.auth.passwordKey }}
- name: AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
  value: {{ printf "postgresql+psycopg2://%s:$(AIRFLOW_DB_PASSWORD)@%s:5432/%s" .Values.postgresql.auth.username (include "kafka-archive.postgresqlHost" .) .Values.postgresql.databases.airflow | quote }}
{{- end }}
- name: AIRFLOW__CELERY__RESULT_BACKEND
  value: "db+$(AIRFLOW__DATABASE__SQL_ALCHEMY_CONN)"
{{- if eq .Values.airflow.celery.broker.type "external" }}
- name: AIRFLOW__CELERY__BROKER_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.airflow.celery.broker.external.existingSecret }}
      key: {{ .Values.airflow.celery.broker.external.urlKey }}
{{- else }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.auth.existingSecret }}
      key: {{ .Values.redis.auth.passwordKey }}
- name: AIRFLOW__CELERY__BROKER_URL
  value: {{ printf "redis://:$(REDIS_PASSWORD)@%s:6379/0" (include "kafka-archive.redisHost" .) | quote }}
{{- end }}
{{- include "kafka-archive.notifyEnv" . }}
{{- with .Values.airflow.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The notification settings (docs/operations.md): the webhook URL by secretKeyRef only, the
deadlines read when the DAG processor parses the archive and catalog DAGs. Part of every
Airflow container's environment, since task callbacks run in workers and archivers and deadline
callbacks in the triggerer.
*/}}
{{- define "kafka-archive.notifyEnv" -}}
{{- $n := .Values.monitoring.notifications }}
{{- with $n.webhook.existingSecret }}
- name: KAFKA_ARCHIVE_NOTIFY_WEBHOOK
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $n.webhook.urlKey }}
{{- end }}
{{- with $n.archiveDeadline }}
- name: KAFKA_ARCHIVE_ARCHIVE_DEADLINE
  value: {{ . | quote }}
{{- end }}
{{- with $n.catalogDeadline }}
- name: KAFKA_ARCHIVE_CATALOG_DEADLINE
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
Environment of everything that runs kafka-archive code (workers, archivers, the api-server,
Spark pods): the catalog URL, the store and its AWS settings, the archive configuration.
*/}}
{{- define "kafka-archive.platformEnv" -}}
{{- if eq .Values.catalog.database.type "external" }}
- name: KAFKA_ARCHIVE_DB
  valueFrom:
    secretKeyRef:
      name: {{ .Values.catalog.database.external.existingSecret }}
      key: {{ .Values.catalog.database.external.urlKey }}
{{- else }}
- name: KAFKA_ARCHIVE_DB_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.postgresql.auth.existingSecret }}
      key: {{ .Values.postgresql.auth.passwordKey }}
- name: KAFKA_ARCHIVE_DB
  value: {{ printf "postgresql+psycopg://%s:$(KAFKA_ARCHIVE_DB_PASSWORD)@%s:5432/%s" .Values.postgresql.auth.username (include "kafka-archive.postgresqlHost" .) .Values.postgresql.databases.catalog | quote }}
{{- end }}
{{ include "kafka-archive.storeEnv" . }}
{{- if include "kafka-archive.archiveConfigEnabled" . }}
- name: KAFKA_ARCHIVE_CONFIG
  value: /opt/kafka-archive/config/archive.yaml
{{- end }}
{{- end -}}

{{/*
The object store: its URI, region, endpoint, checksum setting and static credentials (part of
platformEnv; alone for the fetch archivers, which need no catalog and no archive configuration).
*/}}
{{- define "kafka-archive.storeEnv" -}}
- name: KAFKA_ARCHIVE_STORE
  value: {{ include "kafka-archive.storeUri" . | quote }}
{{- with .Values.objectStore.region }}
- name: AWS_REGION
  value: {{ . | quote }}
{{- end }}
{{- with .Values.objectStore.endpointUrl }}
- name: AWS_ENDPOINT_URL_S3
  value: {{ . | quote }}
{{- end }}
{{- if not .Values.objectStore.requireStoreChecksum }}
{{- /* botocore validates whole-object checksums on GET by default; stores without flexible
checksums misreport them (kafka-archive still checks its own sha256). */}}
- name: AWS_RESPONSE_CHECKSUM_VALIDATION
  value: when_required
{{- end }}
{{- with .Values.objectStore.credentials.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.objectStore.credentials.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.objectStore.credentials.secretAccessKeyKey }}
{{- end }}
{{- end -}}

{{/* Environment that points spark-submit at the chart's Spark settings. */}}
{{- define "kafka-archive.sparkEnv" -}}
{{- if .Values.spark.enabled }}
- name: SPARK_CONF_DIR
  value: /opt/kafka-archive/spark-conf
- name: KAFKA_ARCHIVE_SPARK_MASTER
  value: {{ .Values.spark.master | quote }}
{{- if eq .Values.spark.deployMode "client" }}
{{- /* In client mode the driver runs in this pod. Executors call back to the pod IP, and own
their executor pods to this pod so Kubernetes deletes them with it. spark-submit's JVM (also the
one behind an in-process SparkSession) reads spark.* Java system properties as Spark settings. */}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: SPARK_SUBMIT_OPTS
  value: "-Dspark.driver.host=$(POD_IP) -Dspark.kubernetes.driver.pod.name=$(POD_NAME)"
{{- end }}
{{- end }}
{{- end -}}

{{/* Volumes shared by the Airflow pods. */}}
{{- define "kafka-archive.airflowVolumes" -}}
- name: airflow-config
  configMap:
    name: {{ include "kafka-archive.componentName" (list . "airflow-config") }}
- name: tmp
  emptyDir: {}
- name: logs
  emptyDir: {}
{{- if include "kafka-archive.archiveConfigEnabled" . }}
- name: archive-config
  configMap:
    name: {{ include "kafka-archive.componentName" (list . "archive-config") }}
{{- end }}
{{- end -}}

{{- define "kafka-archive.airflowVolumeMounts" -}}
{{- /* A mounted airflow.cfg also stops Airflow from writing a generated one into the
read-only root file system. */}}
- name: airflow-config
  mountPath: /opt/airflow/airflow.cfg
  subPath: airflow.cfg
  readOnly: true
- name: tmp
  mountPath: /tmp
- name: logs
  mountPath: /opt/airflow/logs
{{- if include "kafka-archive.archiveConfigEnabled" . }}
- name: archive-config
  mountPath: /opt/kafka-archive/config
  readOnly: true
{{- end }}
{{- end -}}

{{/* Init container that waits until `airflow db migrate` has brought the schema up to date. */}}
{{- define "kafka-archive.waitForMigrations" -}}
- name: wait-for-airflow-migrations
  image: {{ include "kafka-archive.image" . }}
  imagePullPolicy: {{ .Values.images.platform.pullPolicy }}
  args: ["airflow", "db", "check-migrations", "--migration-wait-timeout=600"]
  env:
    {{- include "kafka-archive.airflowEnv" . | trim | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContexts.container | nindent 4 }}
  resources:
    {{- toYaml .Values.migrations.resources | nindent 4 }}
  volumeMounts:
    {{- include "kafka-archive.airflowVolumeMounts" . | trim | nindent 4 }}
{{- end -}}

{{/* Probe timing fields. Call with a probe-timing values object. */}}
{{- define "kafka-archive.probeTiming" -}}
initialDelaySeconds: {{ .initialDelaySeconds }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
{{- end -}}

{{/* exec probe command of a Celery worker: answers a ping addressed to this pod's worker. */}}
{{- define "kafka-archive.celeryPing" -}}
exec:
  command:
    - sh
    - -c
    - exec celery --app airflow.providers.celery.executors.celery_executor.app inspect ping -d "celery@$(hostname)" --timeout 20
{{- end -}}

{{/* One NetworkPolicy rule destination list. Call with a {to, ports} values object. */}}
{{- define "kafka-archive.egressRule" -}}
- ports:
    {{- toYaml .ports | nindent 4 }}
  {{- with .to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/*
Egress every Airflow component needs: the metadata DB (in-chart PostgreSQL or external), and
the api-server's task execution API.
*/}}
{{- define "kafka-archive.airflowEgress" -}}
{{- if or (eq .Values.airflow.metadataDatabase.type "internal") (eq .Values.catalog.database.type "internal") }}
- to:
    - podSelector:
        matchLabels:
          {{- include "kafka-archive.selectorLabels" (list . "postgresql") | nindent 10 }}
  ports:
    - port: 5432
      protocol: TCP
{{- end }}
{{- if or (eq .Values.airflow.metadataDatabase.type "external") (eq .Values.catalog.database.type "external") }}
{{ include "kafka-archive.egressRule" .Values.networkPolicies.externalDatabase }}
{{- end }}
- to:
    - podSelector:
        matchLabels:
          {{- include "kafka-archive.selectorLabels" (list . "api-server") | nindent 10 }}
  ports:
    - port: 8080
      protocol: TCP
{{- end -}}

{{/* Egress to the Celery broker (scheduler, workers, archivers). */}}
{{- define "kafka-archive.brokerEgress" -}}
{{- if eq .Values.airflow.celery.broker.type "internal" }}
- to:
    - podSelector:
        matchLabels:
          {{- include "kafka-archive.selectorLabels" (list . "redis") | nindent 10 }}
  ports:
    - port: 6379
      protocol: TCP
{{- else }}
{{ include "kafka-archive.egressRule" .Values.networkPolicies.externalBroker }}
{{- end }}
{{- end -}}

{{/* Ingress of the worker log server from the api-server (task logs in the UI). */}}
{{- define "kafka-archive.logServerIngress" -}}
- from:
    - podSelector:
        matchLabels:
          {{- include "kafka-archive.selectorLabels" (list (index . 0) "api-server") | nindent 10 }}
  ports:
    - port: {{ index . 1 }}
      protocol: TCP
{{- end -}}

{{/* nodeSelector / tolerations / affinity of a pod. Call with a component values object. */}}
{{- define "kafka-archive.podPlacement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* PodDisruptionBudget of a component. Call with (list $ "component" $componentValues). */}}
{{- define "kafka-archive.pdb" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $values := index . 2 -}}
{{- if and $values.enabled $values.pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "kafka-archive.componentName" (list $root $component) }}
  labels:
    {{- include "kafka-archive.labels" (list $root $component) | nindent 4 }}
spec:
  maxUnavailable: {{ $values.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "kafka-archive.selectorLabels" (list $root $component) | nindent 6 }}
{{- end }}
{{- end -}}

{{/* Pod template annotations: restart pods when the configuration they mount changes. */}}
{{- define "kafka-archive.configChecksums" -}}
checksum/airflow-config: {{ include (print .Template.BasePath "/airflow/airflow-configmap.yaml") . | sha256sum }}
checksum/archive-config: {{ include (print .Template.BasePath "/archive-config/archive-config-configmap.yaml") . | sha256sum }}
{{- end -}}

{{/* A Spark pod template (a Pod manifest Spark merges its own settings into).
Call with (list $ "driver"|"executor"). */}}
{{- define "kafka-archive.sparkPodTemplate" -}}
{{- $root := index . 0 -}}
{{- $role := index . 1 -}}
{{- $s := $root.Values.spark -}}
apiVersion: v1
kind: Pod
metadata:
  labels:
    {{- include "kafka-archive.labels" (list $root "spark") | nindent 4 }}
    kafka-archive.io/spark-role: {{ $role }}
spec:
  serviceAccountName: {{ include "kafka-archive.serviceAccountName" (list $root "spark") }}
  {{- /* Only the driver talks to the Kubernetes API (it creates the executors). */}}
  automountServiceAccountToken: {{ eq $role "driver" }}
  securityContext:
    {{- toYaml $s.podSecurityContext | nindent 4 }}
  {{- with $s.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $s.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  containers:
    - name: spark
      command: ["/opt/spark-entrypoint.sh"]
      env:
        {{- include "kafka-archive.platformEnv" $root | trim | nindent 8 }}
      securityContext:
        {{- toYaml $s.containerSecurityContext | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
  volumes:
    - name: tmp
      emptyDir: {}
{{- end -}}

{{/* Metadata of a migration Job: a hook, or a per-revision plain Job (Job specs are immutable,
so an upgrade needs a new name). Call with (list $ "suffix"). */}}
{{- define "kafka-archive.migrationJobMeta" -}}
{{- $root := index . 0 -}}
{{- if $root.Values.migrations.useHelmHooks }}
name: {{ include "kafka-archive.componentName" (list $root (index . 1)) }}
annotations:
  helm.sh/hook: post-install,post-upgrade
  helm.sh/hook-weight: "1"
  helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- else }}
name: {{ printf "%s-%d" (include "kafka-archive.componentName" (list $root (index . 1)) | trunc 55 | trimSuffix "-") (int $root.Release.Revision) }}
{{- end }}
labels:
  {{- include "kafka-archive.labels" (list $root "migrations") | nindent 2 }}
{{- end -}}

{{/* Labels of one alert rule: its severity and monitoring.alerts.labels. Call with (list $ "severity"). */}}
{{- define "kafka-archive.alertLabels" -}}
{{- $root := index . 0 -}}
severity: {{ index . 1 }}
{{- with $root.Values.monitoring.alerts.labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
