universe = vanilla
executable = x_sleep.pl
arguments = 30
# So we stay idle...
request_foobar = 1234
queue
