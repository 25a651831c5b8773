executable   = job_dagman_default_log-nodeB.pl
universe     = local
output       = job_dagman_default_log-nodeB1.out
error        = job_dagman_default_log-nodeB1.err
# No log file specified; default should be used.
Notification = NEVER
queue
