# perl_hash.pl - the perl row of make bench: a hash of COUNT keys (300,000
# by default), each holding a small array, then a pass over it.
# usage: perl benches/perl_hash.pl [COUNT]
use strict;
use warnings;
my $count = shift // 300000;
my %h;
$h{"key-$_"} = [$_, "value-$_"] for 1 .. $count;
my $sum = 0;
$sum += $h{$_}[0] for keys %h;
print scalar(keys %h), " $sum\n";
