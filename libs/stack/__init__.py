"""Running tether on one machine: the state directory, embedded servers, the process tree."""
