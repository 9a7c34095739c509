# bash completion for gpushare. The commands, subcommands, options and option
# values come from the binary itself (`gpushare --complete ...`, generated from
# the option tables of cli/), so they are always those of the installed one:
# after --strategy the strategies, after --workload the workloads, after
# --mode request and job, after a directory option directories.
_gpushare() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} gs=${COMP_WORDS[0]}
	local cmd="" at=0 i opt kind head words w
	local -a lines
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} != -* ]]; then
			cmd=${COMP_WORDS[i]}
			at=$i
			break
		fi
	done
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then words="--help --version"; else words=$("$gs" --complete commands 2>/dev/null); fi
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	# After "--": the program and its arguments.
	for ((i = at + 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			if ((i + 1 == COMP_CWORD)); then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			else
				mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			fi
			return
		fi
	done
	# A subcommand: "mps start", "farm status".
	words=$("$gs" --complete subcommands "$cmd" 2>/dev/null | tr '\n' ' ')
	if [[ -n $words ]]; then
		if ((COMP_CWORD == at + 1)) && [[ $cur != -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
			if [[ $cmd == farm ]]; then # the job file
				mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -f -- "$cur")
			fi
			return
		fi
		# Its options: "mps start" has those of mps that apply to start.
		[[ " $words " == *" ${COMP_WORDS[at + 1]} "* ]] && cmd="$cmd ${COMP_WORDS[at + 1]}"
	fi
	# The value of an option: "--opt VALUE" or "--opt=VALUE" (bash splits at '=').
	opt=
	if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
		opt=${COMP_WORDS[COMP_CWORD - 2]}
	elif [[ $prev == -* && $cur != -* ]]; then
		opt=$prev
	fi
	if [[ -n $opt ]]; then
		mapfile -t lines < <("$gs" --complete values "$cmd" "$opt" 2>/dev/null)
		kind=${lines[0]:-}
		case $kind in
		enum)
			mapfile -t COMPREPLY < <(compgen -W "${lines[*]:1}" -- "$cur")
			return
			;;
		list)
			# Complete the item after the last comma, with those not
			# already in the list.
			head= words=
			[[ $cur == *,* ]] && head=${cur%,*},
			for w in "${lines[@]:1}"; do
				[[ ,$head == *,"$w",* ]] || words+=" $w"
			done
			mapfile -t COMPREPLY < <(compgen -P "$head" -W "$words" -- "${cur##*,}")
			compopt -o nospace 2>/dev/null
			return
			;;
		dir)
			mapfile -t COMPREPLY < <(compgen -d -- "$cur")
			return
			;;
		file)
			mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			return
			;;
		flag | "") ;; # not an option with a value: go on
		*)
			COMPREPLY=() # a number, a duration, a size...: nothing to offer
			return
			;;
		esac
	fi
	if [[ $cur == -* ]]; then
		words=$("$gs" --complete options "$cmd" 2>/dev/null | awk '{ print $1 }' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	case $cmd in
	report | "farm status") mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	*) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	esac
}
complete -F _gpushare gpushare
