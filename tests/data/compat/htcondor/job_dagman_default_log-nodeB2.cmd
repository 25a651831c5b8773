executable   = job_dagman_default_log-nodeB.pl
universe     = local
output       = job_dagman_default_log-nodeB2.out
error        = job_dagman_default_log-nodeB2.err
# No log file specified; default should be used.
Notification = NEVER
queue
