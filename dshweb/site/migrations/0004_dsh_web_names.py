"""``dsh web`` is not "the engine": the compaction engine is a DSH plugin."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0003_compactionrequest_owner"),
    ]

    operations = [
        migrations.RenameModel(old_name="EngineSetting", new_name="DshWebSetting"),
        migrations.RenameField(
            model_name="compactionrequest", old_name="engine_answer", new_name="dsh_web_answer"
        ),
        migrations.AlterField(
            model_name="compactionrequest",
            name="dsh_web_answer",
            field=models.TextField(blank=True, help_text="What dsh web answered (JSON)."),
        ),
    ]
