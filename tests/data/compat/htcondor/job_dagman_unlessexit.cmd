Executable           	= ./x_dagman_node-ret.pl
Universe             	= vanilla
log = job_dagman_unlessexit.log
Notification         	= NEVER
getenv = CONDOR*,PATH
output = job_dagman_unlessexit.out
error = job_dagman_unlessexit.err
Queue

