"""What can be run: task folders (ours, Harbor's, the original Comet eval's) and treatments, loaded
and validated at the file boundary."""
