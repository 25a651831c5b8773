executable   = /bin/echo
arguments    = OK
universe     = scheduler
output       = job_dagman_splice-L-subdir2/$(job).out
error        = job_dagman_splice-L-subdir2/$(job).err
log          = job_dagman_splice-L-subdir2/job_dagman_splice-L-subdir2.log
Notification = NEVER
queue
