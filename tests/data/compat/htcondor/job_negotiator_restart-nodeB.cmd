executable = job_negotiator_restart-nodeB.pl
universe = scheduler
getenv = true
output = job_negotiator_restart-nodeB.out
error = job_negotiator_restart-nodeB.err
log = job_negotiator_restart-nodeB.log
notification = NEVER
queue
