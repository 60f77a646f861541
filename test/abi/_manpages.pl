#!/usr/bin/perl
# Man page checks (curl test1139/test1173/test1477 style), run by manpages.sh:
# every exported function has man/man3/<name>.3 with every section; its
# SYNOPSIS shows the header's prototype; every SYNOPSIS names only exported
# functions; every EXAMPLE compiles; every DEXA_E_* code named exists and
# every code of a function's header comment is in its page; SEE ALSO points at
# pages that exist; every page renders with groff -ww without a warning; the
# man7 pages I own exist and dexagents-errors(7) lists every code.
use strict;
use warnings;
use File::Temp qw(tempdir);

my ($pass, $fail, $skip) = (0, 0, 0);
sub ok { $pass++; print "ok   $_[0]\n"; }
sub bad { my $n = shift; $fail++; print "FAIL $n\n"; print "    $_\n" for @_; }
sub skipped { $skip++; print "skip $_[0]\n    skipped: $_[1]\n"; }
sub slurp { open(my $f, '<', $_[0]) or return undef; local $/; my $s = <$f>; close $f; $s }
sub squash { my $s = shift; $s =~ s/\s+/ /g; $s =~ s/\( /(/g; $s =~ s/^ | $//g; $s }

my $tmp = tempdir(CLEANUP => 1);
my $cc = $ENV{CC_FOR_DOCS} || 'cc';

# Exported functions: the version script.
my $map = slurp('lib/libdexagents.map');
$map =~ s{/\*.*?\*/}{}gs;
my %exported = map { $_ => 1 } ($map =~ /\b(dexa_\w+)\s*;/g);

# Header prototypes and the codes named in each function's header comment.
my (%proto, %hcodes);
for my $h (glob 'include/dexagents/*.h') {
  my $t = slurp($h);
  my $last_comment = '';
  while ($t =~ m{(/\*.*?\*/)|(DEXA_EXTERN\s+([^;]*?\b(dexa_\w+)\s*\([^;]*?\))\s*;)|(;)}gs) {
    if (defined $1) { $last_comment = $1; next; }
    if (defined $5) { next; }
    my ($decl, $name) = ($3, $4);
    $proto{$name} = squash($decl) . ';';
    $hcodes{$name} = { map { $_ => 1 } ($last_comment =~ /\b(DEXA_E_\w+)/g) };
    $last_comment = '' unless $t =~ /\G\s*DEXA_EXTERN/; # a comment covers the run of decls after it
  }
}
my %codes = map { $_ => 1 } (slurp('include/dexagents/errors.h') =~ /^\s*(DEXA_(?:E_\w+|OK))\s*=/mg);

# Unescapes the roff of code blocks back to C.
sub unroff {
  my $s = shift;
  $s =~ s/\\-/-/g; $s =~ s/\\e/\\/g; $s =~ s/\\\(aq/'/g; $s =~ s/\\&//g;
  $s =~ s/\\f[BIRP]//g;
  return $s;
}
sub section {
  my ($src, $name) = @_;
  return $src =~ /^\.SH "?\Q$name\E"?\n(.*?)(?=^\.SH |\z)/ms ? $1 : undef;
}
sub groff_warnings {
  my $file = shift;
  my $out = `cd man && groff -man -Tutf8 -ww -z "$file" 2>&1`;
  return $? == 0 ? $out : "groff exit status $?\n$out";
}
my $have_groff = system('command -v groff >/dev/null 2>&1') == 0;
my $have_cc = system("command -v $cc >/dev/null 2>&1") == 0;
my $have_man = system('command -v man >/dev/null 2>&1') == 0;

# 1. A page for every exported function, and a page only for those.
for my $f (sort keys %exported) {
  if (-f "man/man3/$f.3") { ok("man3 page for $f"); } else { bad("man3 page for $f", "man/man3/$f.3 is missing"); }
}
for my $p (glob 'man/man3/*.3') {
  my ($n) = $p =~ m{([^/]+)\.3$};
  bad("man3 page $n documents an exported function", "$n is not in lib/libdexagents.map") unless $exported{$n};
}

# 2. Each page.
my $example_no = 0;
for my $p (sort glob 'man/man3/*.3') {
  my ($n) = $p =~ m{([^/]+)\.3$};
  next unless $exported{$n};
  my @why;
  my $src = slurp($p);
  if (-l $p) { # a shared page: a symbolic link, so that man -l works from anywhere
    my $link = readlink($p);
    my $target = "man/man3/$link";
    push @why, "the link $link leaves man/man3" if $link =~ m{/};
    push @why, "$link is itself a link" if -l $target;
    $src =~ s/\\f[BIRP]//g if defined $src;
    if (!defined $src) { bad("page $n", "link target $target does not exist"); next; }
    my $name = section($src, 'NAME') // '';
    push @why, "NAME of $link does not list $n" unless $name =~ /\b\Q$n\E\b/;
    if ($have_man) {
      my $out = `MANWIDTH=80 man -l -P cat "$p" 2>&1 >/dev/null`;
      push @why, "man -l $p: $out" if $? != 0 || $out ne '';
    }
  } elsif ($src =~ /^\.so /m && $src !~ /^\.SH/m) {
    push @why, "a .so page: man -l cannot follow it from the repository; make it a link";
  } else {
    $src =~ s/\\f[BIRP]//g;
    for my $s ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'RETURN VALUE', 'OWNERSHIP', 'THREAD SAFETY',
               'EXAMPLE', 'AVAILABILITY', 'SEE ALSO') {
      push @why, "no $s section" unless defined section($src, $s);
    }
    push @why, "no .TH line" unless $src =~ /^\.TH \S+ 3 /m;
    my $avail = section($src, 'AVAILABILITY') // '';
    push @why, "AVAILABILITY does not say \"Added in 1.N\"" unless $avail =~ /Added in \d+\.\d+/;
    if ($have_groff) {
      my $w = groff_warnings("man3/$n.3");
      push @why, "groff -ww: $w" if $w ne '';
    }
    # SEE ALSO points at pages that exist (the man7 pages of the core are reported apart).
    my $see = section($src, 'SEE ALSO') // '';
    while ($see =~ /^\.BR\s+(\S+)\s+\((\d)\)/mg) {
      my ($rn, $rs) = ($1, $2);
      next if -f "man/man$rs/$rn.$rs";
      next if $rs eq '7' && ($rn eq 'dexagents-flow' || $rn eq 'dexagents-events'); # see below
      push @why, "SEE ALSO $rn($rs): no such page";
    }
    # DEXA_E_* codes named must exist.
    for my $c ($src =~ /\b(DEXA_E_\w+)/g) { push @why, "names unknown code $c" unless $codes{$c} || $c eq "DEXA_E_UNKNOWN"; }
  }
  my $syn = unroff(section($src, 'SYNOPSIS') // '');
  my $ret = section($src, 'RETURN VALUE') // '';
  my $desc = section($src, 'DESCRIPTION') // '';
  # SYNOPSIS shows this function, and with the header's prototype.
  my %synfn;
  while ($syn =~ /^([^.\n][^;]*?\b(dexa_\w+)\s*\([^;]*\));/mg) { $synfn{$2} = squash($1) . ';'; }
  if (!$synfn{$n}) { push @why, "SYNOPSIS does not declare $n"; }
  elsif ($proto{$n} && $synfn{$n} ne $proto{$n}) {
    push @why, "SYNOPSIS prototype differs from the header:", "  page:   $synfn{$n}", "  header: $proto{$n}";
  }
  for my $g (sort keys %synfn) { push @why, "SYNOPSIS declares $g, which is not exported" unless $exported{$g}; }
  # Every code of the header comment is documented on the page.
  for my $c (sort grep { $codes{$_} } keys %{$hcodes{$n} // {}}) {
    push @why, "header comment names $c but the page does not" unless "$ret$desc" =~ /\b\Q$c\E\b/;
  }
  if (@why) { bad("page $n", @why); } else { ok("page $n"); }
}

# 3. Every EXAMPLE compiles (each primary page once).
for my $p (sort glob 'man/man3/*.3') {
  next if -l $p; # its target's EXAMPLE is compiled once
  my $src = slurp($p);
  next unless $src =~ /^\.SH/m;
  my ($n) = $p =~ m{([^/]+)\.3$};
  my $ex = section($src, 'EXAMPLE') // next;
  my @lines = grep { !/^\.(nf|fi|RS|RE|PP|EX|EE)\b/ } split /\n/, $ex;
  my $code = unroff(join("\n", @lines));
  if (!$have_cc) { skipped("EXAMPLE of $n compiles", "no C compiler"); next; }
  open(my $f, '>', "$tmp/ex.c") or die;
  print $f "#include <dexagents/dexagents.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n",
    "#line 1 \"$n.3 EXAMPLE\"\n", $code, "\n";
  close $f;
  my $out = `$cc -std=c11 -Wall -Wextra -Werror -Wno-unused-function -Iinclude -fsyntax-only "$tmp/ex.c" 2>&1`;
  if ($? == 0) { ok("EXAMPLE of $n compiles"); } else { bad("EXAMPLE of $n compiles", split /\n/, $out); }
}

# 4. man7: my pages exist and render; the core's pages are reported until they land.
for my $p (qw(dexagents dexagents-errors dexagents-threads dexagents-abi)) {
  my $f = "man/man7/$p.7";
  if (!-f $f) { bad("man7 page $p", "$f is missing"); next; }
  my $src = slurp($f);
  $src =~ s/\\f[BIRP]//g;
  my @why;
  push @why, "no .TH line" unless $src =~ /^\.TH \S+ 7 /m;
  push @why, "no NAME section" unless defined section($src, 'NAME');
  if ($have_groff) { my $w = groff_warnings("man7/$p.7"); push @why, "groff -ww: $w" if $w ne ''; }
  for my $c ($src =~ /\b(DEXA_E_\w+)/g) { push @why, "names unknown code $c" unless $codes{$c} || $c eq "DEXA_E_UNKNOWN"; }
  if (@why) { bad("man7 page $p", @why); } else { ok("man7 page $p"); }
}
for my $p (qw(dexagents-flow dexagents-events)) {
  my $f = "man/man7/$p.7";
  if (!-f $f) { skipped("man7 page $p", "not written yet (the core's page)"); next; }
  my $w = $have_groff ? groff_warnings("man7/$p.7") : '';
  if ($w eq '') { ok("man7 page $p renders"); } else { bad("man7 page $p renders", split /\n/, $w); }
}
if (my $errs = slurp('man/man7/dexagents-errors.7')) {
  my @missing = grep { !/^DEXA_OK$/ && $errs !~ /\b\Q$_\E\b/ } sort keys %codes;
  if (@missing) { bad("dexagents-errors(7) lists every code", "missing: @missing"); }
  else { ok("dexagents-errors(7) lists every code"); }
}

if ($skip) { print "$pass passed, $fail failed, $skip skipped\n"; } else { print "$pass passed, $fail failed\n"; }
exit($fail ? 1 : 0);
