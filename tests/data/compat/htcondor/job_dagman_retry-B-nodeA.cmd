executable		= job_dagman_retry-B-nodeA.pl
arguments		=
universe		= scheduler
notification	= NEVER
output			= job_dagman_retry-B-nodeA.out
error			= job_dagman_retry-B-nodeA.err
log				= job_dagman_retry-B-nodeA.log
queue
