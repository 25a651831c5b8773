executable   = /bin/echo
arguments    = OK
universe     = scheduler
output       = $(job).out
error        = $(job).err
log          = submit-D.log
Notification = NEVER
queue
