executable   = /bin/echo
arguments    = OK
universe     = scheduler
output       = $(job).out
error        = $(job).err
log          = submit-O.log
Notification = NEVER
queue
