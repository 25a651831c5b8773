Executable           	= ./x_dagman_node-ret.pl
Universe             	= vanilla
log = job_dagman_retry-node.log
Notification         	= NEVER
getenv = CONDOR*,PATH
output = job_dagman_retry-node.out
error = job_dagman_retry-node.err
Queue

