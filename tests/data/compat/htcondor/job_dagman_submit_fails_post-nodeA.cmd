executable   = /this_should_make_submit_fail
universe     = local
output       = job_dagman_submit_fails_post-nodeA.out
error        = job_dagman_submit_fails_post-nodeA.err
log          = job_dagman_submit_fails_post.log
Notification = NEVER
queue
