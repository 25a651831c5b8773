executable     	= job_dagman_abort-final-A-node-sleep.pl
universe        = vanilla
notification    = NEVER
getenv = CONDOR*,PATH
output			= job_dagman_abort-final-A-node.C2.out
error			= job_dagman_abort-final-A-node.C2.err
queue

