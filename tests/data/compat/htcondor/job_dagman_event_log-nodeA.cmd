executable   = job_dagman_event_log-node.pl
universe     = local
output       = job_dagman_event_log-node.out
error        = job_dagman_event_log-node.err
# No log file specified; default should be used.
Notification = NEVER
queue
