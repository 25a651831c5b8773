executable   = /bin/echo
arguments    = OK
universe     = scheduler
output       = $(job).out
error        = $(job).err
log          = submit-E.log
Notification = NEVER
queue
