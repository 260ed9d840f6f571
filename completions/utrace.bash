# SPDX-License-Identifier: MIT
# bash completion for utrace(1); installed as
# $datadir/bash-completion/completions/utrace.

_utrace()
{
	local cur prev words cword i
	_init_completion -n = || return

	# after "--": the command and its own arguments
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} == -- ]]; then
			_command_offset $((i + 1))
			return
		fi
	done

	case $prev in
	-b | --backend)
		COMPREPLY=($(compgen -W 'auto agent ptrace kernel' -- "$cur"))
		return ;;
	--format)
		COMPREPLY=($(compgen -W 'text json chrome' -- "$cur"))
		return ;;
	--color)
		COMPREPLY=($(compgen -W 'auto always never' -- "$cur"))
		return ;;
	-X | --const-print-style)
		COMPREPLY=($(compgen -W 'raw abbrev verbose' -- "$cur"))
		return ;;
	-e)
		COMPREPLY=($(compgen -W 'trace= signal= status= inject= fault= decode-fds=' -- "$cur"))
		compopt -o nospace
		return ;;
	-s | --trace | --syscalls)
		COMPREPLY=($(compgen -W '%file %process %network %signal %memory %desc %ipc all none' -- "$cur"))
		return ;;
	--status)
		COMPREPLY=($(compgen -W 'successful failed unfinished unavailable detached' -- "$cur"))
		return ;;
	-p | --pid)
		_pids
		return ;;
	-o | --output | -P | --trace-path)
		_filedir
		return ;;
	-m | --module)
		_filedir so
		return ;;
	-f | --func | -u | --uprobe | -r | --uretprobe | -l | --list | -S | --strsize | \
		-d | --duration | --inject | --fault | --string-limit | --signal | -x | -A)
		return ;;
	esac

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '-f --func -u --uprobe -r --uretprobe -s --syscalls
			-c --summary -H --hist -k --stack -S --strsize --inject -m --module
			-o --output --format -F --follow-forks -a --all -b --backend -d --duration
			-t -tt -ttt -T -q -v --color -l --list --why -p --pid -h --help --one-line --lossy
			-V --version -e --trace --signal --status -z --successful-only
			-Z --failed-only -P --trace-path -X --const-print-style
			--string-limit -w --summary-wall-clock --seccomp-bpf --fault -y -yy --decode-fds -ff -C -x -L -A --' -- "$cur"))
		return
	fi
} &&
	complete -F _utrace utrace
