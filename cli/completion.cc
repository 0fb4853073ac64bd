#include "cli/completion.h"

#include <CLI/CLI.hpp>

#include <sstream>
#include <vector>

namespace fleetsim::cli {
namespace {

// The values a CLI::IsMember check accepts: its description in the option's type name
// ("TEXT:{table,json,csv}"); empty when the option takes any value.
std::string choices_of(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  const auto open = type.find('{');
  const auto close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::string words = type.substr(open + 1, close - open - 1);
  for (char& c : words) c = c == ',' ? ' ' : c;
  return words;
}

std::string words_of(const CLI::App& app) {
  std::string words;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) words += " --" + name;
    for (const std::string& name : o->get_snames()) words += " -" + name;
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    words += " " + sub->get_name();
  }
  return words.empty() ? words : words.substr(1);
}

// `case` arms of (command, previous word) whose value has a fixed set of choices.
void write_choices(std::ostream& out, const std::string& command, const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    const std::string choices = choices_of(*o);
    if (choices.empty()) continue;
    if (o->get_positional()) {
      out << "    " << command << ":positional) candidates=\"" << choices << "\" ;;\n";
      continue;
    }
    for (const std::string& name : o->get_lnames()) {
      out << "    " << command << ":--" << name << ") candidates=\"" << choices << "\" ;;\n";
    }
  }
}

}  // namespace

std::string bash_completion(const CLI::App& app) {
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  std::ostringstream out;
  out << "# bash completion for fleetsim, written by `fleetsim completion bash` from the\n"
         "# command definitions. Needs the bash-completion package (_init_completion).\n"
         "_fleetsim() {\n"
         "  local cur prev words cword\n"
         "  _init_completion || return\n"
         "  local command=\"\" i\n"
         "  for ((i = 1; i < cword; i++)); do\n"
         "    case ${words[i]} in\n";
  for (const CLI::App* c : commands) {
    out << "      " << c->get_name() << ") command=" << c->get_name() << "; break ;;\n";
  }
  out << "    esac\n"
         "  done\n"
         "  local key=\"$command:$prev\"\n"
         "  [[ -n $command && $prev == \"$command\" && $cur != -* ]] && "
         "key=\"$command:positional\"\n"
         "  local candidates=\"\"\n"
         "  case $key in\n";
  write_choices(out, "", app);
  for (const CLI::App* c : commands) write_choices(out, c->get_name(), *c);
  out << "  esac\n"
         "  if [[ -n $candidates ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$candidates\" -- \"$cur\"))\n"
         "    return\n"
         "  fi\n"
         "  case $command in\n";
  for (const CLI::App* c : commands) {
    out << "    " << c->get_name() << ") candidates=\"" << words_of(*c) << "\" ;;\n";
  }
  out << "    *) candidates=\"" << words_of(app) << "\" ;;\n";
  out << "  esac\n"
         "  if [[ -z $command || $cur == -* ]]; then\n"
         "    COMPREPLY=($(compgen -W \"$candidates\" -- \"$cur\"))\n"
         "  else\n"
         "    _filedir\n"
         "  fi\n"
         "}\n"
         "complete -F _fleetsim fleetsim\n";
  return out.str();
}

}  // namespace fleetsim::cli
