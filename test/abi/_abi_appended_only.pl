#!/usr/bin/perl
# Reads an abidiff report on stdin and accepts it only when every change is
# members appended at the end of a public struct: the public structs are
# size-versioned (struct_size first, a dexa_<type>_init, growth only at the
# end; dexagents-abi(7)), so a caller built against an older header keeps
# working. Anything else (a removed or changed function, a member moved,
# removed or retyped) is printed and the exit status is 1.
use strict;
use warnings;
my ($old_size, @bad) = (undef);
while (my $l = <STDIN>) {
  chomp $l;
  next if $l =~ /^\s*$/;
  if ($l =~ /^Functions changes summary: (\d+) Removed, \d+ Changed.*?, (\d+) Added/) {
    push @bad, $l if $1 != 0;
    next;
  }
  if ($l =~ /^Variables changes summary: (\d+) Removed, (\d+) Changed/) {
    push @bad, $l if $1 != 0 || $2 != 0;
    next;
  }
  # (printed for some builds, e.g. MINIMAL=1, even with nothing to report)
  if ($l =~ /^Variable symbols changes summary: (\d+) Removed/) {
    push @bad, $l if $1 != 0;
    next;
  }
  next if $l =~ /^\d+ functions? with some indirect sub-type change/;
  next if $l =~ /^\s*\[C\] 'function .*' .*has some indirect sub-type changes:$/;
  next if $l =~ /^\s*(parameter \d+ of type|return type) .* has sub-type changes:$/;
  next if $l =~ /^\s*in (pointed to|unqualified underlying|referenced) type .*:$/;
  next if $l =~ /^\s*underlying type 'struct dexa_\w+' .* changed:$/;
  if ($l =~ /^\s*type size changed from (\d+) to (\d+) \(in bits\)$/) { $old_size = $1; next; }
  next if $l =~ /^\s*\d+ data member insertions?:$/;
  if ($l =~ /^\s*'.*', at offset (\d+) \(in bits\)/) {
    push @bad, "$l  (inserted before the old end, $old_size bits)" unless defined $old_size && $1 >= $old_size;
    next;
  }
  push @bad, $l;
}
exit 0 unless @bad;
print "$_\n" for @bad;
exit 1;
