executable   = ./job_dagman_recovery_event_check-nodeA.pl
universe     = scheduler
output       = job_dagman_recovery_event_check-nodeA.out
error        = job_dagman_recovery_event_check-nodeA.err
log          = job_dagman_recovery_event_check.log
Notification = NEVER
queue
